"""Datasets as numpy batches, read by Rill's C++ readers.

    for images, labels in rill.datasets.fashion_mnist(batch_size=64, seed=0):
        loss, = exe.run([loss_var], feed={"x": images, "label": labels})

The batches come from the input pipeline `rill train --input pipeline` reads
(rill/input_pipeline.h: shuffled per epoch, decoded on threads of its own,
one batch ahead), so for the same seed and epoch they are the same batches
in the same order.
"""
import os

from rill import _core

FASHION_MNIST_DIR = _core.fashion_mnist_dir


def fashion_mnist(train=True, batch_size=64, shuffle=True, seed=0, data_dir=FASHION_MNIST_DIR,
                  epoch=1, decode_threads=1):
    """One epoch of Fashion-MNIST as (images, labels) batches: images float32
    [n, 784] scaled to [0, 1], labels int64 [n, 1]; n is batch_size except in
    the last batch, which holds what is left.

    train: the 60000 training examples (train-*), else the 10000 test ones
    (t10k-*), from IDX files (gzip-compressed or plain) in `data_dir`.
    shuffle, seed, epoch: the order is std::shuffle with
    mt19937_64(seed * 1000003 + epoch), as `rill train --seed SEED` reads
    epoch `epoch` (its first is 1); without shuffle, the files' order.

    The files are read when this is called: missing ones raise rill.IoError
    naming the directory and Debian's dataset-fashion-mnist package; files
    that are not IDX raise rill.ParseError. Returns a generator; closing it
    (or letting it go) stops the pipeline's threads.
    """
    if batch_size < 1:
        raise _core.InvalidArgumentError(
            "rill.datasets.fashion_mnist: batch_size must be positive, not %d" % batch_size)
    source = _core.fashion_mnist_source(os.fspath(data_dir), bool(train))
    pipeline = _core.InputPipeline(source, batch_size, seed, bool(shuffle), decode_threads)
    pipeline.start_epoch(epoch)
    return _batches(pipeline)


def _batches(pipeline):
    try:
        while True:
            batch = pipeline.next()
            if batch is None:
                return
            images, labels = batch
            yield images, labels
    finally:
        pipeline.stop()
