"""The MLP trained from Python against implementations that share no code with
Rill: the same network, initial parameters and batches for 50 SGD steps in
numpy (forward and backward written out here) and in Debian's PyTorch
(python3-torch; skipped, saying so, where it is not installed). The losses of
every step and the final parameters agree within float32 rounding."""
import numpy as np
import pytest

import rill
from rill import layers

STEPS, BATCH, LR = 50, 16, 0.1
SIZES = [20, 32, 16, 5]  # input, two ReLU layers, classes


def batches():
    """Random inputs labelled by a fixed random linear map: learnable."""
    rng = np.random.RandomState(11)
    teacher = rng.randn(SIZES[0], SIZES[-1])
    out = []
    for _ in range(STEPS):
        x = rng.randn(BATCH, SIZES[0]).astype(np.float32)
        out.append((x, (x @ teacher).argmax(axis=1).reshape(-1, 1).astype(np.int64)))
    return out


def rill_run(data):
    """Rill's losses per step, and its initial and final (W, b) per layer."""
    main, startup = rill.Program(), rill.Program()
    main.random_seed = 4
    with rill.program_guard(main, startup):
        x = layers.data("x", shape=[SIZES[0]])
        label = layers.data("label", shape=[1], dtype="int64")
        h = layers.fc(x, size=SIZES[1], act="relu")
        h = layers.fc(h, size=SIZES[2], act="relu")
        loss = layers.mean(layers.softmax_with_cross_entropy(layers.fc(h, SIZES[3]), label))
        rill.optimizer.SGD(learning_rate=LR).minimize(loss)
    scope = rill.Scope()
    exe = rill.Executor()
    exe.run(startup, scope=scope)
    params = lambda: [(scope.get("fc_%d.w" % i), scope.get("fc_%d.b" % i)) for i in range(3)]
    initial = params()
    losses = [exe.run(main, feed={"x": x, "label": y}, fetch_list=[loss], scope=scope)[0].item()
              for x, y in data]
    return losses, initial, params()


def numpy_run(data, initial):
    params = [(w.copy(), b.copy()) for w, b in initial]
    losses = []
    for x, y in data:
        acts = [x]
        for i, (w, b) in enumerate(params):
            z = acts[-1] @ w + b
            acts.append(np.maximum(z, 0) if i < 2 else z)
        logits = acts[-1]
        shifted = logits - logits.max(axis=1, keepdims=True)
        p = np.exp(shifted) / np.exp(shifted).sum(axis=1, keepdims=True)
        rows = np.arange(len(y))
        losses.append(float(-np.log(p[rows, y[:, 0]]).mean()))
        d = p.copy()
        d[rows, y[:, 0]] -= 1
        d /= len(y)
        for i in reversed(range(3)):
            w, b = params[i]
            dw, db = acts[i].T @ d, d.sum(axis=0)
            d = (d @ w.T) * (acts[i] > 0)  # ReLU's derivative at the layer's input
            params[i] = (w - LR * dw, b - LR * db)
    return losses, params


def torch_run(data, initial):
    torch = pytest.importorskip("torch", reason="Debian's python3-torch is not installed "
                                                "(RILL_SETUP_TORCH=1 bash tools/setup.sh)")
    torch.set_num_threads(1)
    linear = []
    for w, b in initial:
        layer = torch.nn.Linear(*w.shape)
        with torch.no_grad():
            layer.weight.copy_(torch.from_numpy(w.T.copy()))
            layer.bias.copy_(torch.from_numpy(b))
        linear.append(layer)
    model = torch.nn.Sequential(linear[0], torch.nn.ReLU(), linear[1], torch.nn.ReLU(), linear[2])
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    losses = []
    for x, y in data:
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(torch.from_numpy(x)),
                                                 torch.from_numpy(y[:, 0]))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, [(l.weight.detach().numpy().T, l.bias.detach().numpy()) for l in linear]


@pytest.mark.parametrize("reference", [numpy_run, torch_run], ids=["numpy", "torch"])
def test_fifty_sgd_steps_train_as_the_reference_does(reference):
    data = batches()
    losses, initial, final = rill_run(data)
    want_losses, want_final = reference(data, initial)
    assert losses[-1] < 0.7 * losses[0]  # it trained
    np.testing.assert_allclose(losses, want_losses, rtol=2e-5)
    for (w, b), (want_w, want_b) in zip(final, want_final):
        np.testing.assert_allclose(w, want_w, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(b, want_b, rtol=1e-4, atol=1e-5)
