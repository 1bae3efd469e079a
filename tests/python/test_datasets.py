"""rill.datasets.fashion_mnist: the batches of `rill train --input pipeline`,
checked against the IDX files decoded here with numpy, in the order
python_reference computes as `rill train` documents it."""
import gzip
import os

import numpy as np
import pytest

import rill
from conftest import run_reference

DATA = rill.datasets.FASHION_MNIST_DIR
needs_data = pytest.mark.skipif(not os.path.isdir(DATA),
                                reason=DATA + " is absent (Debian's dataset-fashion-mnist)")


def read_idx(stem):
    """An IDX file of unsigned bytes as an ndarray, without Rill."""
    path = os.path.join(DATA, stem)
    opener = gzip.open if os.path.exists(path + ".gz") else open
    with opener(path + ".gz" if opener is gzip.open else path, "rb") as f:
        data = f.read()
    rank = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(rank)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * rank).reshape(dims)


@pytest.fixture(scope="module")
def test_set():
    images = read_idx("t10k-images-idx3-ubyte").reshape(10000, 784)
    labels = read_idx("t10k-labels-idx1-ubyte").astype(np.int64).reshape(10000, 1)
    return images.astype(np.float32) / np.float32(255), labels


def reference_order(examples, seed, epoch):
    out = run_reference("order", examples, seed, epoch).stdout.split()
    return np.array([int(i) for i in out], np.int64)


@needs_data
def test_unshuffled_batches_are_the_files_in_order(test_set):
    images, labels = test_set
    batches = list(rill.datasets.fashion_mnist(train=False, batch_size=64, shuffle=False))
    assert len(batches) == 157  # 156 of 64, then 16
    assert [b[0].shape for b in batches[-2:]] == [(64, 784), (16, 784)]
    got_images = np.concatenate([b[0] for b in batches])
    got_labels = np.concatenate([b[1] for b in batches])
    assert got_images.dtype == np.float32 and got_labels.dtype == np.int64
    assert got_labels.shape == (10000, 1)
    np.testing.assert_array_equal(got_images, images)
    np.testing.assert_array_equal(got_labels, labels)


@needs_data
@pytest.mark.parametrize("seed,epoch", [(0, 1), (7, 3)])
def test_shuffled_batches_follow_rill_trains_order(test_set, seed, epoch):
    images, labels = test_set
    order = reference_order(10000, seed, epoch)
    batches = rill.datasets.fashion_mnist(train=False, batch_size=100, seed=seed, epoch=epoch)
    count = 0
    for step, (got_images, got_labels) in enumerate(batches):
        rows = order[step * 100:(step + 1) * 100]
        np.testing.assert_array_equal(got_images, images[rows])
        np.testing.assert_array_equal(got_labels, labels[rows])
        count += 1
    assert count == 100


@needs_data
def test_the_training_set_and_its_first_batch(test_set):
    batches = rill.datasets.fashion_mnist(train=True, batch_size=32, seed=5)
    images, labels = next(batches)
    batches.close()  # stops the pipeline before the epoch ends
    rows = reference_order(60000, 5, 1)[:32]
    train_images = read_idx("train-images-idx3-ubyte").reshape(60000, 784)
    train_labels = read_idx("train-labels-idx1-ubyte").astype(np.int64)
    np.testing.assert_array_equal(images, train_images[rows].astype(np.float32) / np.float32(255))
    np.testing.assert_array_equal(labels[:, 0], train_labels[rows])


def test_missing_files_name_the_directory_and_the_package(tmp_path):
    with pytest.raises(rill.IoError, match=str(tmp_path)) as raised:
        rill.datasets.fashion_mnist(data_dir=tmp_path)
    assert "dataset-fashion-mnist" in str(raised.value)


def test_files_that_are_not_idx_raise_a_parse_error(tmp_path):
    for name in ["t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"]:
        (tmp_path / name).write_bytes(b"not an idx file")
    with pytest.raises(rill.ParseError, match="t10k"):
        rill.datasets.fashion_mnist(train=False, data_dir=tmp_path)


def test_a_batch_size_below_one_is_refused():
    with pytest.raises(rill.InvalidArgumentError, match="batch_size"):
        rill.datasets.fashion_mnist(batch_size=0)
