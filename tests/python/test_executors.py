"""Running from Python: errors raise a rill.Error subclass with Rill's message
and leave the executor usable; fetched arrays own their memory; C-contiguous
feeds are taken without a copy and let go of when no step needs them."""
import gc
import signal
import sys
import threading
import time

import numpy as np
import pytest

import rill
from rill import layers


def build():
    main, startup = rill.Program(), rill.Program()
    main.random_seed = 5
    with rill.program_guard(main, startup):
        x = layers.data("x", shape=[4])
        label = layers.data("label", shape=[1], dtype="int64")
        logits = layers.fc(layers.fc(x, size=8, act="relu"), 3)
        loss = layers.mean(layers.softmax_with_cross_entropy(logits, label))
        rill.optimizer.SGD(learning_rate=0.5).minimize(loss)
    return main, startup, loss


def feed(step=0):
    rng = np.random.RandomState(step)
    return {"x": rng.randn(6, 4).astype(np.float32),
            "label": rng.randint(0, 3, size=(6, 1)).astype(np.int64)}


BAD_RUNS = [
    ({"x": feed()["x"].astype(np.float64)}, ["loss"], rill.InvalidArgumentError,
     'feed "x" is float64'),
    ({"x": np.zeros((6, 5), np.float32)}, ["loss"], rill.InvalidArgumentError,
     r'feed "x" has shape \[6, 5\]'),
    ({"x": np.zeros((6, 4), np.float16)}, ["loss"], rill.InvalidArgumentError,
     "feed x: numpy dtype float16"),
]


def make_executor(kind, main, scope):
    if kind == "reference":
        exe = rill.Executor()
        return lambda feed, fetches: exe.run(main, feed=feed, fetch_list=fetches, scope=scope)
    exe = rill.ParallelExecutor(main, places="cpu:2", scope=scope)
    return lambda feed, fetches: exe.run(feed=feed, fetch_list=fetches)


@pytest.mark.parametrize("kind", ["reference", "parallel"])
def test_bad_runs_raise_rills_error_and_the_executor_goes_on(kind):
    main, startup, loss = build()
    scopes = [rill.Scope(), rill.Scope()]
    for scope in scopes:
        rill.Executor().run(startup, scope=scope)
    failing, control = (make_executor(kind, main, scope) for scope in scopes)
    for step in range(3):
        for bad_feed, fetches, error, message in BAD_RUNS:
            fed = dict(feed(step), **bad_feed)
            fetches = [loss.name if f == "loss" else f for f in fetches]
            with pytest.raises(error, match=message) as raised:
                failing(fed, fetches)
            assert isinstance(raised.value, rill.Error)
        # The failures changed nothing: both scopes train alike.
        got = failing(feed(step), [loss])[0]
        want = control(feed(step), [loss])[0]
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("kind", ["reference", "parallel"])
def test_an_unknown_fetch_raises_not_found_and_the_executor_goes_on(kind):
    # The reference executor runs the step and then finds no such variable;
    # the parallel one refuses before running: so only "it goes on" is common.
    main, startup, loss = build()
    scope = rill.Scope()
    rill.Executor().run(startup, scope=scope)
    run = make_executor(kind, main, scope)
    for step in range(2):
        with pytest.raises(rill.NotFoundError, match="no_such_var"):
            run(feed(step), [loss, "no_such_var"])
        (value,) = run(feed(step), [loss])
        assert value.shape == (1,) and np.isfinite(value).all()


def test_error_classes_follow_rills_codes():
    assert issubclass(rill.NotFoundError, rill.Error)
    assert issubclass(rill.Error, Exception)
    assert rill.NotFoundError.code == "not found"
    assert rill.InvalidArgumentError.code == "invalid argument"
    with pytest.raises(rill.InvalidArgumentError, match="acpu:x"):
        rill.ParallelExecutor(build()[0], places="acpu:x", scope=rill.Scope())


def test_fetched_arrays_own_their_memory_and_outlive_the_executor():
    main, startup, loss = build()
    scope = rill.Scope()
    exe = rill.Executor()
    exe.run(startup, scope=scope)
    weight_before = scope.get("fc_0.w")
    loss_value, weight = exe.run(main, feed=feed(), fetch_list=[loss, "fc_0.w"], scope=scope)
    assert loss_value.flags.owndata and weight.flags.owndata
    kept = weight.copy()
    # The next step updates the parameter in the scope, not the array we hold.
    exe.run(main, feed=feed(1), fetch_list=[loss], scope=scope)
    np.testing.assert_array_equal(weight, kept)
    assert not np.array_equal(scope.get("fc_0.w"), kept)
    assert not np.array_equal(kept, weight_before)  # the first step did update it
    del exe, scope
    gc.collect()
    filler = [np.full(weight.shape, 7, np.float32) for _ in range(100)]
    np.testing.assert_array_equal(weight, kept)
    assert np.isfinite(loss_value).all() and loss_value.shape == (1,)
    del filler


def test_parallel_executor_arrays_outlive_it():
    main, startup, loss = build()
    scope = rill.Scope()
    rill.Executor().run(startup, scope=scope)
    exe = rill.ParallelExecutor(main, places="cpu:2", scope=scope)
    (loss_value,) = exe.run(feed=feed(), fetch_list=[loss])
    kept = loss_value.copy()
    del exe, scope
    gc.collect()
    assert loss_value.flags.owndata
    np.testing.assert_array_equal(loss_value, kept)


def test_scope_reads_and_writes_parameters():
    main, startup, loss = build()
    scope = rill.Scope()
    exe = rill.Executor()
    exe.run(startup, scope=scope)
    zeros = np.zeros((4, 8), np.float32)
    scope.set("fc_0.w", zeros)
    np.testing.assert_array_equal(scope.get("fc_0.w"), zeros)
    assert "fc_0.w" in scope.var_names() and scope.has_var("fc_0.w")
    assert not scope.has_var("nothing_here")
    # The run reads what we wrote: with the first weight zero the hidden layer
    # is zero, the logits are the (zero) output bias, and the loss is ln 3.
    (value,) = exe.run(main, feed=feed(), fetch_list=[loss], scope=scope)
    np.testing.assert_allclose(value, [np.log(3)], rtol=1e-6)
    with pytest.raises(rill.NotFoundError, match="nothing_here"):
        scope.get("nothing_here")


def test_a_program_changed_after_a_run_is_prepared_again():
    main, startup = rill.Program(), rill.Program()
    with rill.program_guard(main, startup):
        x = layers.data("x", shape=[3])
        doubled = x + x
    exe, scope = rill.Executor(), rill.Scope()
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(exe.run(main, feed={"x": data}, fetch_list=[doubled],
                                          scope=scope)[0], data * 2)
    with rill.program_guard(main, startup):
        tripled = doubled + x
    np.testing.assert_array_equal(exe.run(main, feed={"x": data}, fetch_list=[tripled],
                                          scope=scope)[0], data * 3)


def test_non_contiguous_feeds_are_read_in_logical_order():
    main, startup = rill.Program(), rill.Program()
    with rill.program_guard(main, startup):
        x = layers.data("x", shape=[2])
        out = x + x
    data = np.arange(6, dtype=np.float32).reshape(2, 3).T[:, :2]  # 3x2, not C-contiguous
    assert not data.flags.c_contiguous
    got = rill.Executor().run(main, feed={"x": data}, fetch_list=[out], scope=rill.Scope())[0]
    np.testing.assert_array_equal(got, data * 2)


def test_contiguous_feeds_are_viewed_not_copied_and_let_go_after():
    main, startup, loss = build()
    scope = rill.Scope()
    exe = rill.Executor()
    exe.run(startup, scope=scope)
    first, second = feed(0), feed(1)
    x = first["x"]
    base = sys.getrefcount(x)
    want = exe.run(main, feed=first, fetch_list=[loss], scope=scope)
    # The scope's variable views x's memory (no copy) until the next feed.
    assert sys.getrefcount(x) == base + 1
    exe.run(main, feed=second, fetch_list=[loss], scope=scope)
    assert sys.getrefcount(x) == base
    # A non-contiguous feed is read through a C-contiguous copy: the view
    # itself is not held.
    view = np.asfortranarray(second["x"])
    view_base = sys.getrefcount(view)
    exe.run(main, feed={"x": view, "label": second["label"]}, fetch_list=[loss], scope=scope)
    assert sys.getrefcount(view) == view_base
    assert np.isfinite(want[0]).all()


@pytest.mark.parametrize("kind", ["reference", "parallel"])
def test_feeds_train_as_copies_would(kind):
    # The same steps fed arrays the caller keeps and reuses, and fresh copies
    # of them: the same losses, and the caller's arrays unchanged.
    main, startup, loss = build()
    losses = []
    for copies in (False, True):
        scope = rill.Scope()
        rill.Executor().run(startup, scope=scope)
        run = make_executor(kind, main, scope)
        data = [feed(step) for step in range(3)]
        kept = [{k: v.copy() for k, v in d.items()} for d in data]
        got = []
        for step in range(6):
            given = data[step % 3]
            if copies:
                given = {k: v.copy() for k, v in given.items()}
            got.append(run(given, [loss])[0][0])
        for d, k in zip(data, kept):
            for name in d:
                np.testing.assert_array_equal(d[name], k[name])
        losses.append(got)
    np.testing.assert_array_equal(np.array(losses[0]), np.array(losses[1]))


def test_threads_sharing_an_executor_get_the_sequential_numbers():
    main, startup, loss = build()

    def train(exe, scope, out):
        rill.Executor().run(startup, scope=scope)
        out.extend(exe.run(main, feed=feed(step), fetch_list=[loss], scope=scope)[0][0]
                   for step in range(5))

    want = []
    train(rill.Executor(), rill.Scope(), want)
    shared = rill.Executor()
    results = [[] for _ in range(4)]
    threads = [threading.Thread(target=train, args=(shared, rill.Scope(), out)) for out in results]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
        assert not thread.is_alive()
    for got in results:
        np.testing.assert_array_equal(np.array(got, np.float32), np.array(want, np.float32))


def resident_kib():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))


@pytest.mark.parametrize("kind", ["reference", "parallel"])
def test_ten_thousand_steps_leak_no_arrays(kind):
    # Each step fetches a 64x256 float32 hidden layer (64 KiB): were fetched
    # arrays or fed tensors kept alive, 8,000 steps would hold 500 MiB more.
    main, startup = rill.Program(), rill.Program()
    with rill.program_guard(main, startup):
        x = layers.data("x", shape=[16])
        hidden = layers.fc(x, size=256, act="relu")
        loss = layers.mean(hidden)
        rill.optimizer.SGD(learning_rate=1e-3).minimize(loss)
    scope = rill.Scope()
    rill.Executor().run(startup, scope=scope)
    run = make_executor(kind, main, scope)
    data = {"x": np.ones((64, 16), np.float32)}
    for _ in range(2000):
        run(data, [hidden, loss])
    before = resident_kib()
    references = sys.getrefcount(data["x"])
    for _ in range(8000):
        out = run(data, [hidden, loss])
    assert out[0].shape == (64, 256)
    assert resident_kib() - before < 32 * 1024
    # The fed array is viewed, not copied: every step's reference to it is given back.
    assert sys.getrefcount(data["x"]) <= references + 1


def test_strategy_objects_configure_the_parallel_executor():
    """ExecutionStrategy and BuildStrategy reach the C++ executor: the reduce
    strategy with int8 compression (which changes the numbers) and 1 thread give
    what the shorthands give; bad values and a shorthand beside its object are
    refused."""
    main, startup, loss = build()

    def losses(**settings):
        scope = rill.Scope()
        rill.Executor().run(startup, scope=scope)
        exe = rill.ParallelExecutor(main, places="cpu:2", scope=scope, **settings)
        return [exe.run([loss], feed=feed(step))[0] for step in range(3)]

    exec_strategy = rill.ExecutionStrategy()
    exec_strategy.num_threads = 1
    exec_strategy.dependency_wait = "stream_sync"
    exec_strategy.watchdog_timeout_ms = 5000
    build_strategy = rill.BuildStrategy()
    build_strategy.reduce_strategy = "reduce"
    build_strategy.gradient_compression = "int8"
    build_strategy.compression_min_elements = 1
    build_strategy.fuse_bytes = 0
    assert (build_strategy.reduce_strategy, exec_strategy.dependency_wait) == ("reduce",
                                                                              "stream_sync")
    by_objects = losses(exec_strategy=exec_strategy, build_strategy=build_strategy)
    plain = losses()
    assert not np.array_equal(by_objects[2], plain[2])  # int8 merges: other numbers
    shorthand = rill.BuildStrategy()
    shorthand.compression_min_elements = 1
    shorthand.fuse_bytes = 0
    shorthand.reduce_strategy = "reduce"
    shorthand.gradient_compression = "int8"
    np.testing.assert_array_equal(
        by_objects, losses(num_threads=1, build_strategy=shorthand))
    with pytest.raises(rill.InvalidArgumentError, match="neither"):
        build_strategy.reduce_strategy = "sum"
    with pytest.raises(rill.InvalidArgumentError):
        build_strategy.gradient_compression = "int3"
    with pytest.raises(ValueError, match="not both"):
        rill.ParallelExecutor(main, places="cpu:2", strategy="reduce",
                              build_strategy=build_strategy)


def test_run_async_gives_what_run_gives():
    main, startup, loss = build()
    scopes = [rill.Scope(), rill.Scope()]
    for scope in scopes:
        rill.Executor().run(startup, scope=scope)
    synchronous = rill.ParallelExecutor(main, places="cpu:2", scope=scopes[0])
    asynchronous = rill.ParallelExecutor(main, places="cpu:2", scope=scopes[1])
    pending = [asynchronous.run_async([loss], feed=feed(step)) for step in range(4)]
    for step, run in enumerate(pending):
        want = synchronous.run([loss], feed=feed(step))[0]
        np.testing.assert_array_equal(run.result()[0], want)
        assert run.done()
    with pytest.raises(rill.InvalidArgumentError, match="already taken"):
        pending[0].result()
    # A bad feed is refused before the step starts.
    with pytest.raises(rill.InvalidArgumentError, match=r'feed "x" has shape \[6, 5\]'):
        asynchronous.run_async([loss], feed=dict(feed(), x=np.zeros((6, 5), np.float32)))
    np.testing.assert_array_equal(asynchronous.run([loss], feed=feed(9))[0],
                                  synchronous.run([loss], feed=feed(9))[0])


def test_a_checkpoint_restores_training_bit_for_bit(tmp_path):
    main, startup, loss = build()
    exe, trained = rill.Executor(), rill.Scope()
    exe.run(startup, scope=trained)
    for step in range(3):
        exe.run(main, feed=feed(step), fetch_list=[loss], scope=trained)
    path = str(tmp_path / "at3.ckpt")
    rill.save_checkpoint(path, program=main, scope=trained, step=3)
    restored = rill.Scope()
    assert rill.load_checkpoint(path, program=main, scope=restored) == 3
    for name in ("fc_0.w", "fc_0.b", "fc_1.w", "fc_1.b"):
        np.testing.assert_array_equal(restored.get(name), trained.get(name))
    want = exe.run(main, feed=feed(3), fetch_list=[loss], scope=trained)[0]
    got = exe.run(main, feed=feed(3), fetch_list=[loss], scope=restored)[0]
    np.testing.assert_array_equal(got, want)
    rill.save_checkpoint(str(tmp_path / "no_step.ckpt"), program=main, scope=trained)
    assert rill.load_checkpoint(str(tmp_path / "no_step.ckpt"), program=main,
                                scope=rill.Scope()) is None
    with pytest.raises(rill.IoError, match="missing.ckpt"):
        rill.load_checkpoint(str(tmp_path / "missing.ckpt"), program=main, scope=rill.Scope())


def slow_program(layers_count=24, width=1024):
    """A step of `layers_count` width x width matmuls on the fed rows."""
    main, startup = rill.Program(), rill.Program()
    with rill.program_guard(main, startup):
        h = layers.data("x", shape=[width])
        for _ in range(layers_count):
            h = layers.fc(h, size=width, act="tanh")
        out = layers.mean(h)
    scope = rill.Scope()
    rill.Executor().run(startup, scope=scope)
    return main, scope, out


def seconds_until_interrupted(call, after=0.3):
    """Runs call() with SIGINT sent `after` seconds in; the seconds from the
    signal to KeyboardInterrupt."""
    sent = []

    def interrupt():
        sent.append(time.perf_counter())
        signal.raise_signal(signal.SIGINT)

    timer = threading.Timer(after, interrupt)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            call()
    finally:
        timer.cancel()
    assert sent, "the step ended before the signal: make it longer"
    return time.perf_counter() - sent[0]


def test_ctrl_c_stops_a_reference_step_between_ops():
    main, scope, out = slow_program()
    exe = rill.Executor()
    big = {"x": np.ones((2048, 1024), np.float32)}
    start = time.perf_counter()
    exe.run(main, feed=big, fetch_list=[out], scope=scope)
    whole = time.perf_counter() - start
    took = seconds_until_interrupted(
        lambda: exe.run(main, feed=big, fetch_list=[out], scope=scope), after=whole / 4)
    # One op at most runs after the signal (a step of 24 takes `whole`).
    assert took < whole / 2, f"interrupted {took:.2f} s after the signal (a step: {whole:.2f} s)"
    small = {"x": np.ones((2, 1024), np.float32)}
    (value,) = exe.run(main, feed=small, fetch_list=[out], scope=scope)
    assert np.isfinite(value).all()


def parallel_slow_step():
    """An actor executor over slow_program, the big feed and how long one
    step on it takes."""
    main, scope, out = slow_program()
    exe = rill.ParallelExecutor(main, places="cpu", scope=scope)
    big = {"x": np.ones((2048, 1024), np.float32)}
    start = time.perf_counter()
    exe.run(feed=big, fetch_list=[out])
    return exe, out, big, time.perf_counter() - start


def test_ctrl_c_ends_a_wait_for_run_async_and_the_executor_goes_on():
    exe, out, big, whole = parallel_slow_step()
    pending = exe.run_async(feed=big, fetch_list=[out])
    took = seconds_until_interrupted(pending.result, after=whole / 4)
    assert took < 1.0, f"the wait ended {took:.2f} s after the signal (a step: {whole:.2f} s)"
    # The interrupted step finishes on its own; the next ones run.
    (value,) = exe.run(feed={"x": np.ones((2, 1024), np.float32)}, fetch_list=[out])
    assert np.isfinite(value).all()


def test_ctrl_c_during_a_parallel_run_raises_when_the_step_ends():
    exe, out, big, whole = parallel_slow_step()
    seconds_until_interrupted(lambda: exe.run(feed=big, fetch_list=[out]), after=whole / 4)
    (value,) = exe.run(feed={"x": np.ones((2, 1024), np.float32)}, fetch_list=[out])
    assert np.isfinite(value).all()
