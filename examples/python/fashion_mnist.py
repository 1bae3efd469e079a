"""Fashion-MNIST with a 784-256-128-10 MLP and Adam, on Rill's actor executor
with two places (each step's batch split between them, gradients merged).
Settings from the environment: EPOCHS (1), BATCH (64), LR (1e-3), SEED (0),
DATA (/usr/share/datasets/fashion-mnist). Run with the build's package:
    PYTHONPATH=build/python python3 examples/python/fashion_mnist.py
"""
import gzip
import os

import numpy as np
import rill
from rill import layers

env = lambda name, default: type(default)(os.environ.get(name, default))
EPOCHS, BATCH, LR, SEED = env("EPOCHS", 1), env("BATCH", 64), env("LR", 1e-3), env("SEED", 0)
DATA = env("DATA", "/usr/share/datasets/fashion-mnist")


def load(prefix):  # the IDX files: a 16- (images) or 8-byte (labels) header, then bytes
    read = lambda name, skip: np.frombuffer(gzip.open(os.path.join(DATA, name)).read()[skip:], np.uint8)
    images = read(prefix + "-images-idx3-ubyte.gz", 16).reshape(-1, 784).astype(np.float32) / 255
    return images, read(prefix + "-labels-idx1-ubyte.gz", 8).astype(np.int64).reshape(-1, 1)


main, startup = rill.Program(), rill.Program()
main.random_seed = SEED
with rill.program_guard(main, startup):
    image = layers.data("image", shape=[784])
    label = layers.data("label", shape=[1], dtype="int64")
    hidden = layers.fc(layers.fc(image, size=256, act="relu"), size=128, act="relu")
    logits = layers.fc(hidden, size=10)
    loss = layers.mean(layers.softmax_with_cross_entropy(logits, label))
    accuracy = layers.accuracy(layers.softmax(logits), label)
    evaluation = main.clone(for_test=True)  # forward only, before the optimizer's ops
    rill.optimizer.Adam(learning_rate=LR).minimize(loss)  # backward and updates

rill.Executor().run(startup)  # initialise the parameters (in rill.global_scope()), once
train = rill.ParallelExecutor(main, places="cpu:2")  # the graph is built once, here
test = rill.ParallelExecutor(evaluation, places="cpu:2")
(train_x, train_y), (test_x, test_y) = load("train"), load("t10k")
shuffle = np.random.RandomState(SEED)
for epoch in range(1, EPOCHS + 1):
    order, losses = shuffle.permutation(len(train_x)), []
    for i in range(0, len(order), BATCH):
        rows = order[i:i + BATCH]
        losses.append(train.run([loss], feed={"image": train_x[rows], "label": train_y[rows]})[0][0])
    correct = sum(test.run([accuracy], feed={"image": test_x[i:i + 1000],
                                             "label": test_y[i:i + 1000]})[0][0] * len(test_x[i:i + 1000])
                  for i in range(0, len(test_x), 1000))
    print("epoch %d: train loss %.4f, test accuracy %.4f" % (epoch, np.mean(losses), correct / len(test_x)))
