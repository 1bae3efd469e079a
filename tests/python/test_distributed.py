"""Training across processes from Python, with the processes as threads of
this one (the calls that wait release the GIL).

Collective: ranks each with its own scope, executor and
rill.distributed.ProcessGroup over loopback. Two ranks training an MLP on
their halves of each global batch end where one executor on the whole batch
ends (float32: 1e-5 relative), with the same bits on both ranks; allreduce
and broadcast give the sums and rank 0's values; a wrong token is refused.

Parameter servers: the program transpiled for two trainers and two servers
(a parameter cut into row slices across them), the servers serving on
threads, two trainers on their halves: every trainer ends with the
parameters one executor on the whole batch reaches (sync SGD); a wrong token
is refused naming the server; the role comes from the CLI's variables."""
import re
import socket
import threading

import numpy as np
import pytest

import rill
from rill import layers

STEPS = 8
ROWS_PER_RANK = 8


def free_master():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return "127.0.0.1:%d" % s.getsockname()[1]


def on_ranks(world, body):
    """body(rank) on a thread per rank; returns the results, raising the first error."""
    results, errors = [None] * world, [None] * world

    def run(rank):
        try:
            results[rank] = body(rank)
        except Exception as error:  # noqa: BLE001 - handed to the test thread
            errors[rank] = error

    threads = [threading.Thread(target=run, args=(r,)) for r in range(world)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    for error in errors:
        if error is not None:
            raise error
    return results


def group(rank, world, master, token="the job's token", timeout_ms=20000):
    return rill.distributed.ProcessGroup(rank, world, master, token=token, timeout_ms=timeout_ms)


def global_batches(world):
    rng = np.random.RandomState(1)
    rows = world * ROWS_PER_RANK
    return [(rng.randn(rows, 6).astype(np.float32),
             rng.randint(0, 3, size=(rows, 1)).astype(np.int64)) for _ in range(STEPS)]


def mlp(seed, optimizer):
    """The tests' MLP (6 -> 16 ReLU -> 3, softmax cross-entropy) minimized by `optimizer`."""
    main, startup = rill.Program(), rill.Program()
    main.random_seed = seed
    with rill.program_guard(main, startup):
        x = layers.data("x", shape=[6])
        label = layers.data("label", shape=[1], dtype="int64")
        h = layers.fc(x, size=16, act="relu")
        loss = layers.mean(layers.softmax_with_cross_entropy(layers.fc(h, 3), label))
        optimizer.minimize(loss)
    return main, startup, loss


def parameters(scope):
    return {name: scope.get(name) for name in sorted(scope.var_names())
            if re.fullmatch(r"fc_\d+\.[wb]", name)}


def train(batches, seed, process_group=None, places="cpu", strategy="allreduce"):
    main, startup, loss = mlp(seed, rill.optimizer.Adam(learning_rate=0.01))
    scope = rill.Scope()
    rill.Executor().run(startup, scope=scope)
    exe = rill.ParallelExecutor(main, places=places, scope=scope, strategy=strategy,
                                process_group=process_group)
    for x_rows, y_rows in batches:
        exe.run(feed={"x": x_rows, "label": y_rows}, fetch_list=[loss])
    return parameters(scope)


def rank_rows(batches, rank):
    lo, hi = rank * ROWS_PER_RANK, (rank + 1) * ROWS_PER_RANK
    return [(x[lo:hi], y[lo:hi]) for x, y in batches]


@pytest.mark.parametrize("places,strategy", [("cpu", "allreduce"), ("cpu:2", "reduce")])
def test_two_ranks_match_one_executor_on_the_global_batch(places, strategy):
    batches = global_batches(2)
    alone = train(batches, seed=5)
    master = free_master()
    # Rank 1 starts from another seed: the broadcast from rank 0 must make them agree.
    ranks = on_ranks(2, lambda r: train(rank_rows(batches, r), seed=5 if r == 0 else 9,
                                        process_group=group(r, 2, master), places=places,
                                        strategy=strategy))
    assert set(alone) == set(ranks[0]) and len(alone) == 4, sorted(alone)
    for name, want in alone.items():
        got = ranks[0][name]
        assert np.linalg.norm(got - want) <= 1e-5 * np.linalg.norm(want), name
        np.testing.assert_array_equal(ranks[1][name].view(np.uint32), got.view(np.uint32))


def test_allreduce_and_broadcast():
    master = free_master()

    def body(rank):
        g = group(rank, 3, master)
        assert (g.rank, g.world_size) == (rank, 3)
        mine = np.arange(5, dtype=np.float64) * (rank + 1)
        summed = g.allreduce(mine)
        assert mine[1] == rank + 1  # the caller's array is not written
        root = g.broadcast(np.full(4, rank, dtype=np.float32), root=2)
        return summed, root

    for summed, root in on_ranks(3, body):
        np.testing.assert_array_equal(summed, np.arange(5) * 6.0)
        np.testing.assert_array_equal(root, np.full(4, 2, dtype=np.float32))


def test_a_wrong_token_is_refused_naming_rank_zero():
    master = free_master()

    def body(rank):
        try:
            # Rank 0 waits for a rank 1 that never proves the token: 2 s.
            group(rank, 2, master, token="right" if rank == 0 else "wrong", timeout_ms=2000)
        except rill.Error as error:
            return str(error)
        return ""

    errors = on_ranks(2, body)
    assert "tokens differ" in errors[1], errors
    assert "did not have rank 1" in errors[0], errors


def test_several_places_need_the_reduce_strategy():
    master = free_master()

    def body(rank):
        with pytest.raises(rill.UnimplementedError, match="reduce strategy"):
            train(rank_rows(global_batches(2), rank), seed=5, process_group=group(rank, 2, master),
                  places="cpu:2", strategy="allreduce")

    on_ranks(2, body)


TOKEN = "the job's token"


def sgd_mlp(seed, placeable):
    return mlp(seed, rill.optimizer.SGD(learning_rate=0.1, placeable=placeable))


def test_parameter_servers_train_like_one_executor_on_the_global_batch():
    batches = global_batches(2)
    main, startup, loss = sgd_mlp(3, placeable=False)
    scope = rill.Scope()
    exe = rill.Executor()
    exe.run(startup, scope=scope)
    for x, y in batches:
        exe.run(main, feed={"x": x, "label": y}, fetch_list=[loss], scope=scope)
    alone = parameters(scope)

    main, startup, loss = sgd_mlp(3, placeable=True)
    endpoints = [free_master(), free_master()]
    t = rill.distributed.DistributeTranspiler(min_slice_rows=2, min_slice_elements=16)
    t.transpile(0, program=main, startup_program=startup, pservers=",".join(endpoints),
                trainers=2)
    assert "slice" in t.summary(), t.summary()  # fc_0.w [6, 16] is cut across the servers
    servers = [rill.distributed.ParameterServer(t.get_pserver_program(e),
                                                t.get_startup_program(e), e, token=TOKEN)
               for e in endpoints]
    serving = [threading.Thread(target=s.serve) for s in servers]
    for thread in serving:
        thread.start()

    def trainer(rank):
        program = t.get_trainer_program()
        scope = rill.Scope()
        rill.Executor().run(t.get_trainer_startup_program(), scope=scope)
        with rill.distributed.TrainerClient(program, scope, rank, endpoints,
                                            token=TOKEN) as client:
            exe = rill.ParallelExecutor(program, scope=scope)
            for step, (x, y) in enumerate(rank_rows(batches, rank), start=client.start_step + 1):
                client.set_step(step)
                exe.run(feed={"x": x, "label": y}, fetch_list=[loss])
            assert client.counters()["steps"] == STEPS
        return parameters(scope)

    trained = on_ranks(2, trainer)
    for thread in serving:
        thread.join(60)
    assert not any(thread.is_alive() for thread in serving)
    assert [s.step for s in servers] == [STEPS, STEPS]
    assert set(trained[0]) == set(alone) and len(alone) == 4, sorted(trained[0])
    for name, want in alone.items():
        got = trained[0][name]
        assert np.linalg.norm(got - want) <= 1e-5 * np.linalg.norm(want), name
        np.testing.assert_array_equal(trained[1][name].view(np.uint32), got.view(np.uint32))


def test_a_trainer_with_a_wrong_token_is_refused_naming_the_server():
    main, startup, _ = sgd_mlp(3, placeable=True)
    endpoint = free_master()
    t = rill.distributed.DistributeTranspiler()
    t.transpile(0, program=main, startup_program=startup, pservers=[endpoint], trainers=1)
    server = rill.distributed.ParameterServer(t.get_pserver_program(endpoint),
                                              t.get_startup_program(endpoint), endpoint,
                                              token=TOKEN)
    scope = rill.Scope()
    rill.Executor().run(t.get_trainer_startup_program(), scope=scope)
    with pytest.raises(rill.Error, match=re.escape(endpoint)):
        rill.distributed.TrainerClient(t.get_trainer_program(), scope, 0, [endpoint],
                                       token="wrong", connect_timeout_ms=3000)
    del server


def test_transpiling_needs_a_placeable_optimizer():
    main, startup, _ = sgd_mlp(3, placeable=False)
    with pytest.raises(rill.InvalidArgumentError, match="placeable"):
        rill.distributed.DistributeTranspiler().transpile(
            0, program=main, startup_program=startup, pservers="127.0.0.1:1", trainers=1)
    with pytest.raises(RuntimeError, match="transpile"):
        rill.distributed.DistributeTranspiler().get_trainer_program()


def test_the_role_comes_from_the_clis_variables():
    role = rill.distributed.role_from_environment({
        "RILL_ROLE": "trainer", "RILL_TRAINER_ID": "1", "RILL_TRAINERS": "2",
        "RILL_PSERVERS": "10.0.0.1:7000,10.0.0.2:7000", "RILL_TOKEN": "t"})
    assert (role.role, role.trainer_id, role.trainers, role.server_index, role.token) == (
        "trainer", 1, 2, -1, "t")
    assert role.pservers == ["10.0.0.1:7000", "10.0.0.2:7000"]
    assert rill.distributed.role_from_environment({}).role == ""
    with pytest.raises(ValueError, match="RILL_TRAINER_ID"):
        rill.distributed.role_from_environment({"RILL_TRAINER_ID": "one"})
    with pytest.raises(ValueError, match="role must be"):
        rill.distributed.role_from_environment({"RILL_ROLE": "server"})
