"""Collective data parallelism from Python: ranks as threads of this process
(each with its own scope, executor and rill.distributed.ProcessGroup over
loopback; the calls that wait release the GIL). Two ranks training an MLP on
their halves of each global batch end where one executor on the whole batch
ends (float32: 1e-5 relative), with the same bits on both ranks; allreduce
and broadcast give the sums and rank 0's values; a wrong token is refused."""
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


def train(batches, seed, process_group=None, places="cpu", strategy="allreduce"):
    main, startup = rill.Program(), rill.Program()
    main.random_seed = seed
    with rill.program_guard(main, startup):
        x = layers.data("x", shape=[6])
        label = layers.data("label", shape=[1], dtype="int64")
        h = layers.fc(x, size=16, act="relu")
        loss = layers.mean(layers.softmax_with_cross_entropy(layers.fc(h, 3), label))
        rill.optimizer.Adam(learning_rate=0.01).minimize(loss)
    scope = rill.Scope()
    rill.Executor().run(startup, scope=scope)
    exe = rill.ParallelExecutor(main, places=places, scope=scope, strategy=strategy,
                                process_group=process_group)
    for x_rows, y_rows in batches:
        exe.run(feed={"x": x_rows, "label": y_rows}, fetch_list=[loss])
    return {name: scope.get(name) for name in sorted(scope.var_names())
            if re.fullmatch(r"fc_\d+\.[wb]", name)}


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
