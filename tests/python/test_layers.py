"""Each layer's program against the C++ builder's (the same ProgramDesc, byte
for byte), and its values against numpy."""
import subprocess
import os

import numpy as np
import pytest

import rill
from rill import layers

SEED = 3  # python_reference builds with this seed


def build(body):
    main, startup = rill.Program(), rill.Program()
    main.random_seed = SEED
    with rill.program_guard(main, startup):
        out = body()
    return main, startup, out


def mlp():
    x = layers.data("x", shape=[6])
    label = layers.data("label", shape=[1], dtype="int64")
    h = layers.fc(x, size=16, act="relu")
    return layers.mean(layers.softmax_with_cross_entropy(layers.fc(h, 3), label))


def case_fc():
    x = layers.data("x", shape=[2, 3])
    return [layers.fc(x, 5), layers.fc(x, 4, num_flatten_dims=2, act="relu"),
            layers.fc(x, 3, act="softmax")]


def case_activations():
    x = layers.data("x", shape=[6])
    return [layers.relu(x), layers.sigmoid(x), layers.tanh(x), layers.softmax(x)]


def case_losses():
    x = layers.data("x", shape=[6])
    label = layers.data("label", shape=[1], dtype="int64")
    probabilities = layers.softmax(x)
    return [probabilities,
            layers.mean(layers.cross_entropy(probabilities, label)),
            layers.mean(layers.softmax_with_cross_entropy(x, label)),
            layers.accuracy(probabilities, label),
            layers.accuracy(probabilities, label, k=2)]


def case_elementwise():
    x = layers.data("x", shape=[6])
    y = layers.data("y", shape=[6])
    bias = layers.data("bias", shape=[6], append_batch_size=False)
    return [layers.elementwise_add(x, y), layers.elementwise_sub(x, y),
            layers.elementwise_mul(x, y), layers.elementwise_div(x, y),
            layers.elementwise_add(x, bias, axis=1), (x + y) * y]


def case_backward():
    loss = mlp()
    return rill.append_backward(loss)


def case_mlp_sgd():
    return rill.optimizer.SGD(learning_rate=0.1).minimize(mlp())


def case_mlp_adam():
    return rill.optimizer.Adam(learning_rate=0.01).minimize(mlp())


CASES = {"fc": case_fc, "activations": case_activations, "losses": case_losses,
         "elementwise": case_elementwise, "mlp": mlp, "backward": case_backward,
         "mlp_sgd": case_mlp_sgd, "mlp_adam": case_mlp_adam}


@pytest.mark.parametrize("case", sorted(CASES))
def test_layers_build_the_cpp_builders_program(case, cpp_programs):
    main, startup, _ = build(CASES[case])
    want_main, want_startup = cpp_programs(case)
    assert main.serialize() == want_main, main.to_string()
    assert startup.serialize() == want_startup, startup.to_string()


def test_minimize_returns_the_parameters_and_gradients():
    _, _, pairs = build(case_mlp_sgd)
    assert pairs == [("fc_0.w", "fc_0.w@GRAD"), ("fc_0.b", "fc_0.b@GRAD"),
                     ("fc_1.w", "fc_1.w@GRAD"), ("fc_1.b", "fc_1.b@GRAD")]


def run_once(main, startup, feed, fetches):
    exe, scope = rill.Executor(), rill.Scope()
    exe.run(startup, scope=scope)
    return exe.run(main, feed=feed, fetch_list=fetches, scope=scope), scope


def softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_activations_and_losses_match_numpy():
    rng = np.random.RandomState(1)
    x = rng.randn(5, 6).astype(np.float32)
    label = np.array([[0], [5], [2], [2], [1]], dtype=np.int64)
    main, startup, activations = build(case_activations)
    relu, sigmoid, tanh, soft = run_once(main, startup, {"x": x}, activations)[0]
    np.testing.assert_allclose(relu, np.maximum(x, 0), rtol=1e-6)
    np.testing.assert_allclose(sigmoid, 1 / (1 + np.exp(-x)), rtol=1e-5)
    np.testing.assert_allclose(tanh, np.tanh(x), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(soft, softmax(x), rtol=1e-5)

    main, startup, losses = build(case_losses)
    _, cross, with_softmax, top1, top2 = run_once(main, startup, {"x": x, "label": label},
                                                  losses)[0]
    p = softmax(x.astype(np.float64))
    want = -np.log(p[np.arange(5), label[:, 0]]).mean()
    np.testing.assert_allclose(cross, [want], rtol=1e-5)
    np.testing.assert_allclose(with_softmax, [want], rtol=1e-5)
    ranks = (p > p[np.arange(5), label[:, 0]][:, None]).sum(axis=1)
    np.testing.assert_allclose(top1, [(ranks < 1).mean()])
    np.testing.assert_allclose(top2, [(ranks < 2).mean()])


def test_elementwise_ops_and_operators_match_numpy():
    rng = np.random.RandomState(2)
    x = rng.randn(4, 6).astype(np.float32)
    y = (rng.rand(4, 6) + 0.5).astype(np.float32)
    bias = rng.randn(6).astype(np.float32)
    main, startup, outs = build(case_elementwise)
    add, sub, mul, div, add_bias, combined = run_once(
        main, startup, {"x": x, "y": y, "bias": bias}, outs)[0]
    np.testing.assert_array_equal(add, x + y)
    np.testing.assert_array_equal(sub, x - y)
    np.testing.assert_array_equal(mul, x * y)
    np.testing.assert_allclose(div, x / y, rtol=1e-6)
    np.testing.assert_array_equal(add_bias, x + bias)
    np.testing.assert_array_equal(combined, (x + y) * y)


def test_fc_matches_numpy_with_the_scopes_parameters():
    rng = np.random.RandomState(3)
    x = rng.randn(3, 2, 3).astype(np.float32)
    main, startup, outs = build(case_fc)
    (plain, per_row, soft), scope = run_once(main, startup, {"x": x}, outs)
    flat = x.reshape(3, 6).astype(np.float64)
    np.testing.assert_allclose(plain, flat @ scope.get("fc_0.w") + scope.get("fc_0.b"),
                               rtol=1e-5, atol=1e-6)
    rows = x.astype(np.float64) @ scope.get("fc_1.w") + scope.get("fc_1.b")
    np.testing.assert_allclose(per_row, np.maximum(rows, 0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(soft, softmax(flat @ scope.get("fc_2.w") + scope.get("fc_2.b")),
                               rtol=1e-5)


def test_operators_need_variables():
    def body():
        x = layers.data("x", shape=[6])
        with pytest.raises(TypeError):
            x + 1.0

    build(body)


def test_a_bad_layer_raises_with_rills_message():
    def body():
        x = layers.data("x", shape=[6])
        y = layers.data("y", shape=[5])
        with pytest.raises(rill.InvalidArgumentError, match="elementwise_add"):
            layers.elementwise_add(x, y)
        with pytest.raises(rill.InvalidArgumentError, match="activation"):
            layers.fc(x, 3, act="swish")

    build(body)


@pytest.mark.parametrize("suffix", [".pb", ".pbtxt"])
def test_program_files_round_trip_and_rill_print_reads_them(tmp_path, suffix):
    main, _, _ = build(case_mlp_sgd)
    path = str(tmp_path / ("main" + suffix))
    rill.save_program(main, path)
    assert rill.load_program(path).serialize() == main.serialize()
    printed = subprocess.run([os.environ["RILL_CLI"], "print", path], capture_output=True,
                             text=True, timeout=60)
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout.strip() == main.to_string().strip()


def test_loading_a_missing_or_broken_file_raises(tmp_path):
    with pytest.raises(rill.IoError, match="nowhere.pb"):
        rill.load_program(str(tmp_path / "nowhere.pb"))
    broken = tmp_path / "broken.pbtxt"
    broken.write_text("blocks { ops { type: \n")
    with pytest.raises(rill.ParseError, match="broken.pbtxt"):
        rill.load_program(str(broken))
