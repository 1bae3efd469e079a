"""Control flow from Python: Fluid's While (`with loop.block():`), Go and
channels build the same while, go and channel ops as the C++ Builder, and
both executors run them to the values a Python loop computes."""
import numpy as np
import pytest

import rill
from rill import layers

KINDS = ["reference", "parallel"]


def run(kind, main, fetches):
    scope = rill.Scope()
    if kind == "reference":
        return rill.Executor().run(main, feed={}, fetch_list=fetches, scope=scope)
    return rill.ParallelExecutor(main, places="cpu", scope=scope).run(feed={}, fetch_list=fetches)


@pytest.mark.parametrize("kind", KINDS)
def test_a_while_loop_sums_its_counter(kind):
    main, startup = rill.Program(), rill.Program()
    with rill.program_guard(main, startup):
        i = layers.fill_constant([1], "float32", 0)
        limit = layers.fill_constant([1], "float32", 10)
        total = layers.fill_constant([1], "float32", 0)
        cond = layers.less_than(i, limit)
        loop = layers.While(cond)
        with loop.block():
            layers.assign(total + i, total)
            layers.increment(i)
            layers.less_than(i, limit, cond=cond)
    assert main.num_blocks() == 2
    assert "while(Condition=[less_than_0.Out])" in main.to_string()
    got_total, got_i = run(kind, main, [total, i])
    assert got_total[0] == sum(range(10)) and got_i[0] == 10


@pytest.mark.parametrize("kind", KINDS)
def test_gradients_flow_back_through_a_while_loop(kind):
    # h <- tanh(fc(h) + xs[:, t]) for 3 steps; loss = mean(h): the gradients
    # of the fc's weight and bias against the recurrence differentiated in numpy.
    rng = np.random.RandomState(5)
    h0, xs_value = rng.randn(2, 3), rng.randn(2, 3, 3)
    main, startup = rill.Program(), rill.Program()
    with rill.program_guard(main, startup):
        xs = layers.data("xs", shape=[3, 3], dtype="float64")
        h = layers.data("h", shape=[3], dtype="float64")
        i = layers.fill_constant([1], "int64", 0)
        steps = layers.fill_constant([1], "int64", 3)
        cond = layers.less_than(i, steps)
        with layers.While(cond).block():
            layers.assign(layers.tanh(layers.fc(h, 3) + layers.read_step(xs, i)), h)
            layers.increment(i)
            layers.less_than(i, steps, cond=cond)
        loss = layers.mean(h)
        (b, b_grad), (w, w_grad) = sorted(rill.optimizer.append_backward(loss))  # ".b" < ".w"
    assert "while_grad" in main.to_string()
    scope = rill.Scope()
    rill.Executor().run(startup, scope=scope)
    w_value, b_value = np.array(scope.get(w)), np.array(scope.get(b))
    feed = {"xs": xs_value, "h": h0}
    fetches = [loss, w_grad, b_grad]
    if kind == "reference":
        got = rill.Executor().run(main, feed=feed, fetch_list=fetches, scope=scope)
    else:
        got = rill.ParallelExecutor(main, places="cpu", scope=scope).run(feed=feed,
                                                                         fetch_list=fetches)
    states = [h0]
    for t in range(3):
        states.append(np.tanh(states[-1] @ w_value + b_value + xs_value[:, t]))
    dh = np.full_like(h0, 1.0 / h0.size)
    dw, db = np.zeros_like(w_value), np.zeros_like(b_value)
    for t in reversed(range(3)):
        dpre = dh * (1 - states[t + 1] ** 2)
        dw += states[t].T @ dpre
        db += dpre.sum(axis=0)
        dh = dpre @ w_value.T
    np.testing.assert_allclose(got[0], np.mean(states[-1]), rtol=1e-12)
    np.testing.assert_allclose(got[1], dw, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got[2], db, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kind", KINDS)
def test_nested_loops_run_the_inner_body_rows_times_columns(kind):
    main, startup = rill.Program(), rill.Program()
    with rill.program_guard(main, startup):
        rows = layers.fill_constant([1], "float32", 3)
        cols = layers.fill_constant([1], "float32", 4)
        count = layers.fill_constant([1], "float32", 0)
        r = layers.fill_constant([1], "float32", 0)
        outer_cond = layers.less_than(r, rows)
        outer = layers.While(outer_cond)
        with outer.block():
            c = layers.fill_constant([1], "float32", 0)
            inner_cond = layers.less_than(c, cols)
            inner = layers.While(inner_cond)
            with inner.block():
                layers.increment(count)
                layers.increment(c)
                layers.less_than(c, cols, cond=inner_cond)
            layers.increment(r)
            layers.less_than(r, rows, cond=outer_cond)
    assert main.num_blocks() == 3
    (got,) = run(kind, main, [count])
    assert got[0] == 12


@pytest.mark.parametrize("kind", KINDS)
def test_a_go_block_feeds_a_loop_through_a_channel(kind):
    # A producer sends 1, 2, 3 and closes; the consumer sums until closed.
    main, startup = rill.Program(), rill.Program()
    with rill.program_guard(main, startup):
        channel = layers.make_channel([1], "float32", capacity=1)
        with layers.Go():
            for value in (1, 2, 3):
                layers.channel_send(channel, layers.fill_constant([1], "float32", value))
            layers.channel_close(channel)
        total = layers.fill_constant([1], "float32", 0)
        value, ok = layers.channel_recv(channel)
        loop = layers.While(ok)
        with loop.block():
            layers.assign(total + value, total)
            layers.channel_recv(channel, return_value=value, status=ok)
    (got,) = run(kind, main, [total])
    assert got[0] == 6


def test_a_body_that_raises_appends_no_loop_and_the_program_goes_on():
    main, startup = rill.Program(), rill.Program()
    with rill.program_guard(main, startup):
        i = layers.fill_constant([1], "float32", 0)
        cond = layers.less_than(i, layers.fill_constant([1], "float32", 1))
        with pytest.raises(ValueError):
            with layers.While(cond).block():
                layers.increment(i)
                raise ValueError("in the body")
        doubled = layers.scale(i, 2.0)  # appended to the main block again
    text = main.to_string()
    assert ": while(" not in text and ": scale(X=[fill_constant_0.Out])" in text
    (got,) = run("reference", main, [doubled])
    assert got[0] == 0


def test_a_condition_of_more_than_one_element_is_refused_by_name():
    main, startup = rill.Program(), rill.Program()
    with rill.program_guard(main, startup):
        x = layers.fill_constant([2], "float32", 0)
        cond = layers.less_than(x, layers.fill_constant([2], "float32", 1))
        with pytest.raises(rill.InvalidArgumentError, match="must have one element"):
            with layers.While(cond).block():
                layers.increment(x)


def test_parallel_do_gives_what_the_layers_give_on_the_whole_batch():
    main, startup = rill.Program(), rill.Program()
    main.random_seed = 3
    with rill.program_guard(main, startup):
        x = layers.data("x", shape=[4])
        pd = layers.ParallelDo(2)
        with pd.do():
            h = layers.fc(pd.read_input(x), size=3, act="tanh")
            pd.write_output(h)
        out = pd()
    assert ": parallel_do(Inputs=[x])" in main.to_string()
    scope = rill.Scope()
    rill.Executor().run(startup, scope=scope)
    data = np.random.RandomState(0).randn(6, 4).astype(np.float32)
    exe = rill.ParallelExecutor(main, places="cpu", scope=scope)
    (got,) = exe.run(feed={"x": data}, fetch_list=[out])
    weight, bias = scope.get("fc_0.w"), scope.get("fc_0.b")
    np.testing.assert_allclose(got, np.tanh(data @ weight + bias), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", KINDS)
def test_select_runs_the_case_that_can_go_on(kind):
    # A ready receive wins over default; with nothing ready, default runs; a
    # send case delivers into a buffered channel (as csp_ops_test does in C++).
    main, startup = rill.Program(), rill.Program()
    with rill.program_guard(main, startup):
        full = layers.make_channel([1], "float32", capacity=1)
        empty = layers.make_channel([1], "float32", capacity=1)
        sink = layers.make_channel([1], "float32", capacity=1)
        layers.channel_send(full, layers.fill_constant([1], "float32", 5))
        first = layers.fill_constant([1], "float32", 0)
        second = layers.fill_constant([1], "float32", 0)
        for channel, into in ((full, first), (empty, second)):
            with layers.Select() as select:
                with select.case(layers.channel_recv, channel) as (value, ok):
                    layers.assign(value, into)
                with select.default():
                    layers.assign(layers.fill_constant([1], "float32", -1), into)
        with layers.Select() as select:
            with select.case(layers.channel_send, sink, layers.fill_constant([1], "float32", 9)):
                pass
        sent, _ = layers.channel_recv(sink)
    assert main.to_string().count(": select(") == 3
    got_first, got_second, got_sent = run(kind, main, [first, second, sent])
    assert (got_first[0], got_second[0], got_sent[0]) == (5, -1, 9)


def test_a_select_case_of_another_action_is_refused():
    main, startup = rill.Program(), rill.Program()
    with rill.program_guard(main, startup):
        channel = layers.make_channel([1], "float32", capacity=1)
        with layers.Select() as select:
            with pytest.raises(ValueError, match="channel_recv or layers.channel_send"):
                select.case(layers.channel_close, channel)
            with select.default():
                pass
    assert main.to_string().count(": select(") == 1
