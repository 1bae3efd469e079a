import sys, torch
sys.path.insert(0, "tools/bench")
import torch_gpu_models as m, fashion_batches
from torch import nn
from torch_mlp import train_step
torch.manual_seed(0)
dev = torch.device("cuda")
model = m.build("cnn").to(dev)
opt = torch.optim.Adam(model.parameters(), lr=1e-3, fused=True)
loss_fn = nn.CrossEntropyLoss()
batches, _, _ = fashion_batches.load(256)
data = [(torch.from_numpy(x), torch.from_numpy(y)) for x, y in batches]
for i in range(20):
    x, y = data[i % len(data)]; train_step(model, opt, loss_fn, x.to(dev), y.to(dev))
from torch.profiler import profile, ProfilerActivity
with profile(activities=[ProfilerActivity.CUDA]) as p:
    for i in range(20):
        x, y = data[i % len(data)]; train_step(model, opt, loss_fn, x.to(dev), y.to(dev))
print(p.key_averages().table(sort_by="cuda_time_total", row_limit=18, max_name_column_width=60))
