"""Times the training step of the models of `rill train --model` in PyTorch,
on THREADS threads (default 1), for tools/bench/models_vs_torch.sh: the same
layer sizes as tools/rill/models.cc, models_transformer.cc and models_rnn.cc
(the recurrent models: torch's fused nn.LSTM / nn.GRU with their own
initialisation), Xavier-uniform weights and zero biases for the linear and
convolution layers as Rill initialises them, softmax cross-entropy, Adam lr 1e-3,
and the top-1 accuracy Rill's program computes each step; the loss is
fetched with .item() every step as `rill train` fetches it. Data: real
Fashion-MNIST batches (tools/bench/fashion_batches.py). 10 warm-up steps are
not timed; then steps run for the given seconds.

Prints per model and batch size (one line):
  torch model=M batch=B samples_per_sec=S steps=N first_loss=L0 last_loss=L1
Usage: torch_models.py SECONDS MODEL BATCH [THREADS]"""
import math
import sys
import time

import torch
from torch import nn

import fashion_batches


class Residual(nn.Module):
    """relu(x + bn(conv(relu(bn(conv(x)))))), as models.cc's ResidualBlock."""

    def __init__(self, channels):
        super().__init__()
        self.body = nn.Sequential(conv_bn(channels, channels, 1), nn.ReLU(),
                                  conv_bn(channels, channels, 1))

    def forward(self, x):
        return torch.relu(self.body(x) + x)


def conv_bn(inputs, filters, stride):
    return nn.Sequential(nn.Conv2d(inputs, filters, 3, stride, 1, bias=False),
                         nn.BatchNorm2d(filters, momentum=0.1, eps=1e-5))


class Attention(nn.Module):
    """Builder::MultiHeadSelfAttention: q, k (no bias), v and output projections."""

    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.q, self.k = nn.Linear(width, width), nn.Linear(width, width, bias=False)
        self.v, self.out = nn.Linear(width, width), nn.Linear(width, width)

    def forward(self, x):
        n, t, e = x.shape
        d = e // self.heads
        split = lambda y: y.reshape(n, t, self.heads, d).transpose(1, 2)
        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        weights = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d), -1)
        return self.out((weights @ v).transpose(1, 2).reshape(n, t, e))


class EncoderLayer(nn.Module):
    """Builder::TransformerEncoderLayer: pre-norm, GELU FFN, no dropout."""

    def __init__(self, width, heads, hidden):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.attention = Attention(width, heads)
        self.ffn = nn.Sequential(nn.Linear(width, hidden), nn.GELU(), nn.Linear(hidden, width))

    def forward(self, x):
        x = x + self.attention(self.norm1(x))
        return x + self.ffn(self.norm2(x))


class Transformer(nn.Module):
    """models_transformer.cc: 28 rows as tokens, width 64, 2 layers, 4 heads, FFN 128."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(28, 64)
        self.position = nn.Parameter(torch.randn(28, 64) * 0.02)
        self.layers = nn.Sequential(*[EncoderLayer(64, 4, 128) for _ in range(2)])
        self.norm = nn.LayerNorm(64)
        self.head = nn.Linear(64, 10)

    def forward(self, image):
        x = self.layers(self.embed(image.reshape(-1, 28, 28)) + self.position)
        return self.head(self.norm(x).mean(1))


class Recurrent(nn.Module):
    """models_rnn.cc: 28 rows as 28 steps of 28 pixels, an LSTM or GRU of 128
    units, its last hidden state through fc 10."""

    def __init__(self, cell):
        super().__init__()
        self.rnn = cell(28, 128, batch_first=True)
        self.head = nn.Linear(128, 10)

    def forward(self, image):
        _, last = self.rnn(image.reshape(-1, 28, 28))
        hidden = last[0] if isinstance(last, tuple) else last  # an LSTM's (h, c)
        return self.head(hidden[-1])


def build(name):
    if name == "mlp":
        return nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
                             nn.Linear(128, 10))
    if name == "cnn":
        return nn.Sequential(nn.Unflatten(1, (1, 28, 28)), nn.Conv2d(1, 32, 5, 1, 2), nn.ReLU(),
                             nn.MaxPool2d(2), nn.Conv2d(32, 64, 5, 1, 2), nn.ReLU(),
                             nn.MaxPool2d(2), nn.Flatten(), nn.Linear(3136, 1024), nn.ReLU(),
                             nn.Linear(1024, 10))
    if name == "resnet":
        return nn.Sequential(nn.Unflatten(1, (1, 28, 28)), conv_bn(1, 32, 1), nn.ReLU(),
                             nn.MaxPool2d(2), Residual(32), conv_bn(32, 64, 2), nn.ReLU(),
                             Residual(64), Residual(64), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                             nn.Linear(64, 10))
    if name == "transformer":
        return Transformer()
    if name == "lstm":
        return Recurrent(nn.LSTM)
    if name == "gru":
        return Recurrent(nn.GRU)
    raise SystemExit(f"torch_models: unknown model {name}")


def main():
    seconds, name, batch = float(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    threads = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = build(name)
    for m in model.modules():
        if isinstance(m, (nn.Linear, nn.Conv2d)):
            nn.init.xavier_uniform_(m.weight)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    batches, _, _ = fashion_batches.load(batch)
    data = [(torch.from_numpy(x), torch.from_numpy(y)) for x, y in batches]

    def step(i):
        x, y = data[i % len(data)]
        opt.zero_grad()
        logits = model(x)
        loss = loss_fn(logits, y)
        (torch.softmax(logits, 1).argmax(1) == y).float().mean()  # Rill's accuracy op
        loss.backward()
        opt.step()
        return loss.item()

    first_loss = step(0)
    for i in range(1, 10):
        step(i)
    steps, last_loss = 0, 0.0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        last_loss = step(10 + steps)
        steps += 1
    elapsed = time.perf_counter() - start
    print(f"torch model={name} batch={batch} threads={threads} samples_per_sec={steps * batch / elapsed:.0f} "
          f"steps={steps} first_loss={first_loss:.4f} last_loss={last_loss:.4f}", flush=True)


if __name__ == "__main__":
    main()
