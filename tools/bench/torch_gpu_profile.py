"""Where PyTorch's training step spends GPU time, to set beside
`tools/gpu_bundle.sh profile MODEL BATCH` (Rill's kernels under Nsight
Compute): the models, data and step of torch_gpu_models.py (fused Adam), 20
warm-up steps, then torch.profiler over 20 steps, its kernels by total CUDA
time.

Usage (on a GPU machine, from the repository's root):
    python3 tools/bench/torch_gpu_profile.py [mlp|cnn] [batch, default 256]
"""
import sys

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, "tools/bench")
import fashion_batches  # noqa: E402
import torch_gpu_models  # noqa: E402
from torch_mlp import train_step  # noqa: E402


def main():
    name = sys.argv[1] if len(sys.argv) > 1 else "cnn"
    batch = int(sys.argv[2]) if len(sys.argv) > 2 else 256
    torch.manual_seed(0)
    device = torch.device("cuda")
    model = torch_gpu_models.build(name).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, fused=True)
    loss_fn = nn.CrossEntropyLoss()
    batches, _, _ = fashion_batches.load(batch)
    data = [(torch.from_numpy(x), torch.from_numpy(y)) for x, y in batches]

    def step(i):
        x, y = data[i % len(data)]
        train_step(model, opt, loss_fn, x.to(device), y.to(device))

    for i in range(20):
        step(i)
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        for i in range(20):
            step(i)
    print(p.key_averages().table(sort_by="cuda_time_total", row_limit=18,
                                 max_name_column_width=60))


if __name__ == "__main__":
    main()
