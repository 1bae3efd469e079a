"""Times the MLP training step of tools/bench/mlp_benchmark.cc through Rill's
Python front end: the same program (784-256-128-10 ReLU built with
rill.layers, seed 0, Adam lr 1e-3, softmax cross-entropy, the top-1 accuracy),
the same sequential executor (rill.Executor) and the same real Fashion-MNIST
batches in the same order (tools/bench/fashion_batches.py), the loss fetched
as an ndarray every step. 20 warm-up steps are not timed; then steps run for
the given seconds, each timed alone. What it adds to mlp_benchmark's step is
the binding: building the feed dict, taking the arrays, the fetch's copy.

Prints per batch size (one line, as mlp_benchmark does, so a script can
compare first_loss: the same program and data give the same loss):
  python batch=B samples_per_sec=S median_step_ms=M steps=N first_loss=L0
         last_loss=L1 pixel_sum=P label_sum=Y
Usage: python_mlp.py [seconds, default 3] [batch sizes... default 64 256]
(with the build's package on PYTHONPATH: build/python)"""
import statistics
import sys
import time

import rill
from rill import layers

import fashion_batches


def measure(batch, seconds):
    main, startup = rill.Program(), rill.Program()
    main.random_seed = 0
    with rill.program_guard(main, startup):
        image = layers.data("image", shape=[784])
        label = layers.data("label", shape=[1], dtype="int64")
        hidden = layers.fc(layers.fc(image, size=256, act="relu"), size=128, act="relu")
        logits = layers.fc(hidden, size=10)
        loss = layers.mean(layers.softmax_with_cross_entropy(logits, label))
        layers.accuracy(layers.softmax(logits), label)
        rill.optimizer.Adam(learning_rate=1e-3).minimize(loss)
    scope = rill.Scope()
    exe = rill.Executor()
    exe.run(startup, scope=scope)
    batches, pixel_sum, label_sum = fashion_batches.load(batch)
    feeds = [{"image": x, "label": y.reshape(-1, 1)} for x, y in batches]

    def step(i):
        return float(exe.run(main, feed=feeds[i % len(feeds)], fetch_list=[loss],
                             scope=scope)[0][0])

    first_loss = step(0)
    for i in range(1, 20):
        step(i)
    times, last_loss, i = [], first_loss, 20
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        before = time.perf_counter()
        last_loss = step(i)
        times.append(time.perf_counter() - before)
        i += 1
    wall = time.perf_counter() - start
    print(f"python batch={batch} samples_per_sec={len(times) * batch / wall:.0f} "
          f"median_step_ms={statistics.median(times) * 1e3:.4f} steps={len(times)} "
          f"first_loss={first_loss:.4f} last_loss={last_loss:.4f} "
          f"pixel_sum={pixel_sum:.3f} label_sum={label_sum}", flush=True)


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    for batch in [int(b) for b in sys.argv[2:]] or [64, 256]:
        measure(batch, seconds)


if __name__ == "__main__":
    main()
