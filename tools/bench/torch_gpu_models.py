"""Training throughput of PyTorch on the models of `rill train`, the other side
of tools/bench/gpu_vs_torch.sh (Rill's side: gpu_train_benchmark.cc).

Models as tools/rill/models.cc builds them, initialised like Rill (Xavier
uniform weights, zero biases):
  mlp: 784-256-128-10, ReLU
  cnn: conv 5x5 32 (pad 2) + ReLU + max-pool 2, conv 5x5 64 (pad 2) + ReLU +
       max-pool 2, fc 1024 + ReLU, fc 10
Loss: mean softmax cross-entropy; Rill's program also computes the softmax
accuracy every step, so this does too (not fetched). Optimizer: Adam, lr 1e-3,
betas (0.9, 0.999), eps 1e-8 (torch.optim.Adam's defaults otherwise).

Measured like Rill's side: the same real Fashion-MNIST batches in the same
order (fashion_batches.py; Rill's side reads them with fashion_batches.h)
preloaded in host memory, as Rill is fed host tensors; each step
copies its batch to the device, runs forward, backward and the update, and
fetches the loss with .item() (one sync per step, as Rill's step fetches its
loss). 20 warm-up steps are not timed; steps then run for the given seconds,
each timed alone (the .item() syncs it), and the timing ends after
torch.cuda.synchronize(). One CPU thread:
torch.set_num_threads(1).

Prints per model and batch:
  torch model=M batch=B samples_per_sec=S median_step_ms=T first_loss=L0
        last_loss=L1 pixel_sum=P label_sum=Y
Usage: torch_gpu_models.py [--device cuda|cpu] [--seconds 3] [--models mlp,cnn]
                           [--batches 64,256]
"""
import argparse
import statistics
import time

import torch
from torch import nn

import fashion_batches
from torch_mlp import train_step


# torch.optim.Adam's implementations: foreach (its default on CUDA) launches a
# few multi-tensor kernels per step, fused one; both give the same update.
ADAM_IMPLEMENTATIONS = {"foreach": {"foreach": True}, "fused": {"fused": True}}


def build(name):
    if name == "mlp":
        model = nn.Sequential(
            nn.Linear(784, 256), nn.ReLU(),
            nn.Linear(256, 128), nn.ReLU(),
            nn.Linear(128, 10))
    elif name == "cnn":
        model = nn.Sequential(
            nn.Unflatten(1, (1, 28, 28)),
            nn.Conv2d(1, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(64 * 7 * 7, 1024), nn.ReLU(),
            nn.Linear(1024, 10))
    else:
        raise SystemExit(f"unknown model {name!r} (expected mlp or cnn)")
    for m in model.modules():
        if isinstance(m, (nn.Linear, nn.Conv2d)):
            nn.init.xavier_uniform_(m.weight)
            nn.init.zeros_(m.bias)
    return model


def measure(name, batch, device, seconds, adam):
    torch.manual_seed(0)
    model = build(name).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, **ADAM_IMPLEMENTATIONS[adam])
    loss_fn = nn.CrossEntropyLoss()
    batches, pixel_sum, label_sum = fashion_batches.load(batch)
    data = [(torch.from_numpy(x), torch.from_numpy(y)) for x, y in batches]

    def step(i):
        x, y = data[i % len(data)]
        return train_step(model, opt, loss_fn, x.to(device), y.to(device))

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    first_loss = step(0)
    for i in range(1, 20):
        step(i)
    sync()
    step_ms, last_loss, i = [], 0.0, 20
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        before = time.perf_counter()
        last_loss = step(i)
        step_ms.append((time.perf_counter() - before) * 1e3)
        i += 1
    sync()
    rate = len(step_ms) * batch / (time.perf_counter() - start)
    print(f"torch model={name} batch={batch} samples_per_sec={rate:.0f} "
          f"median_step_ms={statistics.median(step_ms):.4f} "
          f"first_loss={first_loss:.4f} last_loss={last_loss:.4f} "
          f"pixel_sum={pixel_sum:.3f} label_sum={label_sum} adam={adam}", flush=True)


def launch_cost(device):
    """Prints what one small kernel launch, and one with an .item() round trip,
    cost PyTorch on this machine: a step of a small model on a GPU is mostly
    launches, so a slow host (a VM's cores) shows here first."""
    x = torch.zeros(64, device=device)
    for _ in range(1000):
        x.add_(1)
    torch.cuda.synchronize(device)
    n = 10000
    start = time.perf_counter()
    for _ in range(n):
        x.add_(1)
    torch.cuda.synchronize(device)
    launch_us = (time.perf_counter() - start) / n * 1e6
    start = time.perf_counter()
    for _ in range(1000):
        x.add_(1)
        x.sum().item()
    item_us = (time.perf_counter() - start) / 1000 * 1e6
    print(f"torch launch_us={launch_us:.2f} launch_and_item_us={item_us:.2f} "
          "(a small kernel launched, and one with .item(), on this host)", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cuda", help="cuda (default), cuda:N or cpu")
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--models", default="mlp,cnn")
    parser.add_argument("--batches", default="64,256")
    parser.add_argument("--adam", default="foreach", choices=sorted(ADAM_IMPLEMENTATIONS),
                        help="torch.optim.Adam's implementation (fused: one kernel for all parameters, CUDA only)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("torch: no CUDA device (torch.cuda.is_available() is false)")
    if device.type == "cuda":
        launch_cost(device)
    for name in args.models.split(","):
        for batch in args.batches.split(","):
            measure(name, int(batch), device, args.seconds, args.adam)


if __name__ == "__main__":
    main()
