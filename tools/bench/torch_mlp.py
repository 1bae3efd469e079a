"""Times the MLP training step of tools/bench/mlp_benchmark.cc in PyTorch, one
thread: 784-256-128-10 ReLU (Xavier-uniform weights, zero biases, as Rill
initialises them), softmax cross-entropy, Adam lr 1e-3, and the top-1
accuracy Rill's program computes each step; the loss is fetched with .item()
every step as Rill's step fetches it. Data: the same real Fashion-MNIST
batches in the same order as Rill's side (tools/bench/fashion_batches.py).
20 warm-up steps are not timed; then steps run for the given seconds, each
timed alone.

Also times the step's matrix products alone, on the same shapes (forward
x W for the three layers, the three weight gradients and the two input
gradients that backward computes): the GEMM-only bound, gemm_ms, the median of
the eight products together. A full step cannot be faster than that, and a
step far slower than it (tools/bench/mlp_vs_torch.sh refuses a ratio past 5x)
means the baseline is not running its usual path.

Prints per batch size (one line):
  torch batch=B samples_per_sec=S median_step_ms=M steps=N first_loss=L0
        last_loss=L1 pixel_sum=P label_sum=Y gemm_ms=G
Usage: torch_mlp.py [seconds, default 3] [batch sizes... default 64 256]"""
import statistics
import sys
import time

import torch

import fashion_batches


def gemm_only_ms(batch, reps=200):
    """Median time of the step's eight matrix products (M, K, N), in ms."""
    shapes = [(batch, 784, 256), (batch, 256, 128), (batch, 128, 10),   # forward
              (256, batch, 784), (128, batch, 256), (10, batch, 128),   # weight gradients
              (batch, 128, 256), (batch, 10, 128)]                      # input gradients
    g = torch.Generator().manual_seed(0)
    operands = [(torch.randn(m, k, generator=g), torch.randn(k, n, generator=g),
                 torch.empty(m, n)) for m, k, n in shapes]
    times = []
    for i in range(reps + 20):
        start = time.perf_counter()
        for a, b, c in operands:
            torch.mm(a, b, out=c)
        if i >= 20:
            times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def build_model(seed=0):
    """The MLP initialised as Rill initialises it, its Adam and its loss
    (also used by torch_ddp.py)."""
    torch.manual_seed(seed)
    model = torch.nn.Sequential(
        torch.nn.Linear(784, 256), torch.nn.ReLU(),
        torch.nn.Linear(256, 128), torch.nn.ReLU(),
        torch.nn.Linear(128, 10))
    for m in model.modules():
        if isinstance(m, torch.nn.Linear):
            torch.nn.init.xavier_uniform_(m.weight)
            torch.nn.init.zeros_(m.bias)
    return model, torch.optim.Adam(model.parameters(), lr=1e-3), torch.nn.CrossEntropyLoss()


def train_step(model, opt, loss_fn, x, y):
    """One step as Rill's program runs it; returns the loss."""
    opt.zero_grad()
    logits = model(x)
    loss = loss_fn(logits, y)
    (torch.softmax(logits, 1).argmax(1) == y).float().mean()  # Rill's accuracy op
    loss.backward()
    opt.step()
    return loss.item()


def measure(batch, seconds):
    model, opt, loss_fn = build_model()
    batches, pixel_sum, label_sum = fashion_batches.load(batch)
    data = [(torch.from_numpy(x), torch.from_numpy(y)) for x, y in batches]

    def step(i):
        x, y = data[i % len(data)]
        return train_step(model, opt, loss_fn, x, y)

    first_loss = step(0)
    for i in range(1, 20):
        step(i)
    step_ms, last_loss, i = [], 0.0, 20
    start = time.perf_counter()
    elapsed = 0.0
    while elapsed < seconds:
        before = time.perf_counter()
        last_loss = step(i)
        after = time.perf_counter()
        step_ms.append((after - before) * 1e3)
        elapsed = after - start
        i += 1
    print(f"torch batch={batch} samples_per_sec={len(step_ms) * batch / elapsed:.0f} "
          f"median_step_ms={statistics.median(step_ms):.4f} steps={len(step_ms)} "
          f"first_loss={first_loss:.4f} last_loss={last_loss:.4f} "
          f"pixel_sum={pixel_sum:.3f} label_sum={label_sum} "
          f"gemm_ms={gemm_only_ms(batch):.4f}", flush=True)


def main():
    torch.set_num_threads(1)
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    for batch in [int(s) for s in sys.argv[2:]] or [64, 256]:
        measure(batch, seconds)


if __name__ == "__main__":
    main()
