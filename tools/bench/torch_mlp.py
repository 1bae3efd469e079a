"""Times the same MLP training step in PyTorch: 784-256-128-10 ReLU, Adam lr 1e-3,
softmax cross-entropy, on preloaded random data, one thread.
Prints "torch batch=B samples_per_sec=S" per batch size."""
import sys
import time

import torch

torch.set_num_threads(1)
seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
sizes = [int(s) for s in sys.argv[2:]] or [64, 256]
for batch in sizes:
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(784, 256), torch.nn.ReLU(),
        torch.nn.Linear(256, 128), torch.nn.ReLU(),
        torch.nn.Linear(128, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = torch.nn.CrossEntropyLoss()
    data = [(torch.rand(batch, 784), torch.randint(0, 10, (batch,))) for _ in range(16)]

    def step(i):
        x, y = data[i % 16]
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()

    for i in range(20):
        step(i)
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        step(steps)
        steps += 1
    rate = steps * batch / (time.perf_counter() - start)
    print(f"torch batch={batch} samples_per_sec={rate:.0f}", flush=True)
