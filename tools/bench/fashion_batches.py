"""The batches the benchmarks that compare Rill with PyTorch train on, as
tools/bench/fashion_batches.h makes them for Rill: the first `examples` images
of Fashion-MNIST's training set (/usr/share/datasets/fashion-mnist) in file
order, pixel / 255 in float32, cut in order into batches of `batch` rows (a
remainder smaller than a batch is left out). Both sides print pixel_sum (the
pixels summed in double) and label_sum so a script can check they agree.

(The random batches these replace were not what once made PyTorch ten times
slower here: that was glibc's malloc, see mlp_vs_torch.sh.)"""
import gzip
import os

import numpy as np

DIR = "/usr/share/datasets/fashion-mnist"
EXAMPLES = 4096


def _read_idx(name):
    for path in (os.path.join(DIR, name), os.path.join(DIR, name + ".gz")):
        if os.path.exists(path):
            opener = gzip.open if path.endswith(".gz") else open
            with opener(path, "rb") as f:
                return f.read()
    raise SystemExit(f"fashion_batches: {DIR}/{name}[.gz] is missing "
                     "(Debian package dataset-fashion-mnist)")


def load(batch, examples=EXAMPLES):
    """Returns ([(x float32 [batch, 784], y int64 [batch])...], pixel_sum, label_sum)."""
    images = _read_idx("train-images-idx3-ubyte")
    labels = _read_idx("train-labels-idx1-ubyte")
    count, rows, cols = (int.from_bytes(images[4 * i:4 * i + 4], "big") for i in (1, 2, 3))
    if not 0 < batch <= examples <= count:
        raise SystemExit(f"fashion_batches: batch {batch} and {examples} examples of {count}")
    pixels = np.frombuffer(images, np.uint8, examples * rows * cols, 16)
    x_all = (pixels.astype(np.float32) / np.float32(255)).reshape(examples, rows * cols)
    y_all = np.frombuffer(labels, np.uint8, examples, 8).astype(np.int64)
    batches, pixel_sum, label_sum = [], 0.0, 0
    for first in range(0, examples - batch + 1, batch):
        x, y = x_all[first:first + batch], y_all[first:first + batch]
        pixel_sum += float(np.sum(x, dtype=np.float64))
        label_sum += int(y.sum())
        batches.append((x.copy(), y.copy()))
    return batches, pixel_sum, label_sum
