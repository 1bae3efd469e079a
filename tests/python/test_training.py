"""An MLP trained from Python gives the losses, bit for bit, that the C++ API
gives (python_reference, the same program, seed and batches)."""
import numpy as np
import pytest

import rill
from rill import layers
from conftest import run_reference

STEPS = 6
BATCH = 8


def write_batches(directory):
    rng = np.random.RandomState(0)
    batches = []
    for i in range(STEPS):
        x = rng.randn(BATCH, 6).astype(np.float32)
        y = rng.randint(0, 3, size=(BATCH, 1)).astype(np.int64)
        np.save(directory / ("x%d.npy" % i), x)
        np.save(directory / ("y%d.npy" % i), y)
        batches.append((x, y))
    return batches


def build_mlp(optimizer):
    main, startup = rill.Program(), rill.Program()
    main.random_seed = 3  # python_reference's seed
    with rill.program_guard(main, startup):
        x = layers.data("x", shape=[6])
        label = layers.data("label", shape=[1], dtype="int64")
        h = layers.fc(x, size=16, act="relu")
        loss = layers.mean(layers.softmax_with_cross_entropy(layers.fc(h, 3), label))
        optimizer.minimize(loss)
    return main, startup, loss


def train_in_python(optimizer, batches, places=None):
    main, startup, loss = build_mlp(optimizer)
    scope = rill.Scope()
    rill.Executor().run(startup, scope=scope)
    if places is None:
        exe = rill.Executor()
        step = lambda feed: exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
    else:
        exe = rill.ParallelExecutor(main, places=places, scope=scope)
        step = lambda feed: exe.run(feed=feed, fetch_list=[loss])
    return np.array([step({"x": x, "label": y})[0][0] for x, y in batches], dtype=np.float32)


def train_in_cpp(directory, optimizer, places=None):
    run_reference("train", directory, STEPS, optimizer, *([places] if places else []))
    return np.load(directory / "losses.npy")


OPTIMIZERS = {"sgd": lambda: rill.optimizer.SGD(learning_rate=0.1),
              "sgd_cosine": lambda: rill.optimizer.SGD(
                  learning_rate=0.1,
                  learning_rate_schedule=rill.optimizer.WarmupCosineDecay(2, 3, 0.1)),
              "adam": lambda: rill.optimizer.Adam(learning_rate=0.01),
              "adamw": lambda: rill.optimizer.AdamW(learning_rate=0.01, weight_decay=0.1)}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_python_training_matches_the_cpp_api_bit_for_bit(tmp_path, name):
    batches = write_batches(tmp_path)
    want = train_in_cpp(tmp_path, name)
    got = train_in_python(OPTIMIZERS[name](), batches)
    assert want.dtype == got.dtype == np.float32
    assert len(set(got.tolist())) == STEPS, got  # it trained: every step's loss differs
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("places", ["cpu", "cpu:2"])
def test_parallel_executor_matches_the_cpp_parallel_executor(tmp_path, places):
    batches = write_batches(tmp_path)
    want = train_in_cpp(tmp_path, "sgd", places)
    got = train_in_python(OPTIMIZERS["sgd"](), batches, places=places)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_one_place_parallel_executor_matches_the_reference(tmp_path):
    batches = write_batches(tmp_path)
    reference = train_in_python(OPTIMIZERS["adam"](), batches)
    parallel = train_in_python(OPTIMIZERS["adam"](), batches, places="cpu")
    np.testing.assert_array_equal(parallel.view(np.uint32), reference.view(np.uint32))
