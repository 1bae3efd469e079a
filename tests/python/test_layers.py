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


def case_conv_pool():
    image = layers.data("image", shape=[2, 6, 6])
    c = layers.conv2d(image, num_filters=3, filter_size=3, padding=1, act="relu")
    return [image, c, layers.pool2d(c, pool_size=2, pool_stride=2),
            layers.pool2d(c, pool_size=3, pool_type="avg", pool_padding=1),
            layers.conv2d(image, num_filters=4, filter_size=3, stride=2, groups=2)]


def case_shapes():
    x = layers.data("x", shape=[6])
    return [layers.transpose(layers.reshape(x, [-1, 2, 3]), perm=[0, 2, 1]),
            layers.concat([x, x], axis=1), layers.split(x, 3, dim=1),
            layers.scale(x, scale=2.5, bias=0.5), layers.dropout(x, dropout_prob=0.3)]


def case_norm():
    image = layers.data("image", shape=[2, 3, 3])
    bn_image = layers.batch_norm(image, act="relu")
    x = layers.data("x", shape=[6])
    return [bn_image, layers.batch_norm(x, momentum=0.5, epsilon=1e-3),
            layers.gelu(layers.layer_norm(image, begin_norm_axis=2, epsilon=1e-4))]


def case_attention():
    q = layers.data("q", shape=[2, 3, 4])
    k = layers.data("k", shape=[2, 3, 4])
    mask = layers.data("mask", shape=[1, 1, 3])
    scores = layers.matmul(q, k, transpose_y=True, alpha=0.5)
    weights = layers.softmax(scores, mask=mask)
    return [scores, weights, layers.matmul(weights, k), layers.softmax(q, axis=1),
            layers.matmul(q, layers.data("w", shape=[4, 5], append_batch_size=False))]


def case_embedding():
    ids = layers.data("ids", shape=[1], dtype="int64")
    return [layers.embedding(ids, size=[10, 4]),
            layers.embedding(ids, size=[10, 4], is_sparse=True, dtype="float64")]


def case_mlp_momentum_l2_clip():
    optimizer = rill.optimizer.Momentum(
        learning_rate=0.1, momentum=0.8, use_nesterov=True,
        regularization=rill.optimizer.L2Decay(1e-3),
        grad_clip=rill.optimizer.GradientClipByGlobalNorm(5.0))
    return optimizer.minimize(mlp())


CASES = {"attention": case_attention, "norm": case_norm, "mlp_momentum_l2_clip": case_mlp_momentum_l2_clip, "conv_pool": case_conv_pool, "shapes": case_shapes, "embedding": case_embedding,
         "fc": case_fc, "activations": case_activations, "losses": case_losses,
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


def test_shape_layers_match_numpy():
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    main, startup, (transposed, joined, parts, scaled, dropped) = build(case_shapes)
    fetches = [transposed, joined, *parts, scaled, dropped]
    got = run_once(main, startup, {"x": x}, fetches)[0]
    np.testing.assert_array_equal(got[0], x.reshape(2, 2, 3).transpose(0, 2, 1))
    np.testing.assert_array_equal(got[1], np.concatenate([x, x], axis=1))
    for part, want in zip(got[2:5], np.split(x, 3, axis=1)):
        np.testing.assert_array_equal(part, want)
    np.testing.assert_allclose(got[5], 2.5 * x + 0.5, rtol=1e-6)
    kept = got[6] != 0  # dropout keeps x / 0.7 or zeroes
    np.testing.assert_allclose(got[6][kept], x[kept] / 0.7, rtol=1e-6)
    main_test = main.clone(for_test=True)
    np.testing.assert_array_equal(run_once(main_test, startup, {"x": x}, [dropped])[0][0], x)


def test_embedding_picks_the_tables_rows():
    ids = np.array([[3], [0], [9], [3]], dtype=np.int64)
    main, startup, (dense, sparse) = build(case_embedding)
    (got_dense, got_sparse), scope = run_once(main, startup, {"ids": ids}, [dense, sparse])
    for got, table in ((got_dense, "embedding_0.w"), (got_sparse, "embedding_1.w")):
        rows = scope.get(table)[ids[:, 0]]
        np.testing.assert_array_equal(got.reshape(rows.shape), rows)
    assert got_sparse.dtype == np.float64


def test_convolution_and_pooling_match_numpy():
    rng = np.random.RandomState(4)
    image_value = rng.randn(2, 2, 6, 6).astype(np.float32)
    main, startup, (image, c, max_pooled, avg_pooled, _) = build(case_conv_pool)
    (conv, max_value, avg_value), scope = run_once(main, startup, {"image": image_value},
                                                   [c, max_pooled, avg_pooled])
    weight, bias = scope.get("conv2d_0.w"), scope.get("conv2d_0.b")
    padded = np.pad(image_value.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    want = np.zeros((2, 3, 6, 6))
    for i in range(6):
        for j in range(6):
            window = padded[:, :, i:i + 3, j:j + 3]
            want[:, :, i, j] = np.einsum("nchw,fchw->nf", window, weight)
    want = np.maximum(want + bias.reshape(1, 3, 1, 1), 0)
    np.testing.assert_allclose(conv, want, rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(max_value, conv.reshape(2, 3, 3, 2, 3, 2).max(axis=(3, 5)))
    assert avg_value.shape == (2, 3, 6, 6)


@pytest.mark.parametrize("sync", [False, True])
def test_batch_norm_on_two_places_normalises_each_slice_or_with_sync_the_whole_batch(sync):
    rng = np.random.RandomState(6)
    image = (rng.randn(6, 2, 3, 3) * 2 + 1).astype(np.float32)
    main, startup = rill.Program(), rill.Program()
    with rill.program_guard(main, startup):
        x = layers.data("image", shape=[2, 3, 3])
        y = layers.batch_norm(x, sync=sync)
        loss = layers.mean(layers.fc(y, size=1))
        rill.optimizer.SGD(learning_rate=0.1).minimize(loss)
    scope = rill.Scope()
    rill.Executor().run(startup, scope=scope)
    got = rill.ParallelExecutor(main, places="cpu:2", scope=scope).run(
        [y], feed={"image": image})[0]
    wide = image.astype(np.float64)

    def normalised(rows):
        mean, var = rows.mean(axis=(0, 2, 3)), rows.var(axis=(0, 2, 3))
        return (rows - mean.reshape(1, 2, 1, 1)) / np.sqrt(var.reshape(1, 2, 1, 1) + 1e-5), mean

    if sync:  # the whole batch's statistics on both places
        want, mean = normalised(wide)
    else:  # each place its own three rows (place 0's running mean is the scope's)
        want = np.concatenate([normalised(wide[:3])[0], normalised(wide[3:])[0]])
        mean = normalised(wide[:3])[1]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(scope.get("batch_norm_0.mean"), 0.1 * mean, rtol=1e-5, atol=1e-6)


def test_normalisation_layers_match_numpy():
    rng = np.random.RandomState(5)
    image = (rng.randn(4, 2, 3, 3) * 2 + 1).astype(np.float32)
    x = rng.randn(5, 6).astype(np.float32)
    main, startup, (bn_image, bn_x, gelu_norm) = build(case_norm)
    (got_image, got_x, got_gelu), scope = run_once(main, startup, {"image": image, "x": x},
                                                   [bn_image, bn_x, gelu_norm])
    wide = image.astype(np.float64)
    mean, var = wide.mean(axis=(0, 2, 3)), wide.var(axis=(0, 2, 3))
    normed = (wide - mean.reshape(1, 2, 1, 1)) / np.sqrt(var.reshape(1, 2, 1, 1) + 1e-5)
    np.testing.assert_allclose(got_image, np.maximum(normed, 0), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(scope.get("batch_norm_0.mean"), 0.1 * mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(scope.get("batch_norm_0.variance"), 0.9 + 0.1 * var, rtol=1e-5)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(got_x, (x64 - x64.mean(0)) / np.sqrt(x64.var(0) + 1e-3),
                               rtol=1e-4, atol=1e-5)
    rows = wide.reshape(8, 9)
    ln = (rows - rows.mean(1, keepdims=True)) / np.sqrt(rows.var(1, keepdims=True) + 1e-4)
    erf = np.vectorize(__import__("math").erf)
    np.testing.assert_allclose(got_gelu.reshape(8, 9), 0.5 * ln * (1 + erf(ln / np.sqrt(2))),
                               rtol=1e-4, atol=1e-5)
    # The test clone normalises with the running statistics (after one step).
    test_main = main.clone(for_test=True)
    got = rill.Executor().run(test_main, feed={"image": image, "x": x}, fetch_list=[bn_image],
                              scope=scope)[0]
    run_mean = scope.get("batch_norm_0.mean").reshape(1, 2, 1, 1)
    run_var = scope.get("batch_norm_0.variance").reshape(1, 2, 1, 1)
    np.testing.assert_allclose(got, np.maximum((wide - run_mean) / np.sqrt(run_var + 1e-5), 0),
                               rtol=1e-4, atol=1e-5)


def test_attention_layers_match_numpy():
    rng = np.random.RandomState(7)
    q = rng.randn(2, 2, 3, 4).astype(np.float32)
    k = rng.randn(2, 2, 3, 4).astype(np.float32)
    w = rng.randn(4, 5).astype(np.float32)
    mask = np.array([1, 1, 0, 1, 0, 0], np.float32).reshape(2, 1, 1, 3)
    main, startup, outs = build(case_attention)
    (scores, weights, context, by_axis, projected), _ = run_once(
        main, startup, {"q": q, "k": k, "mask": mask, "w": w}, outs)
    q64, k64 = q.astype(np.float64), k.astype(np.float64)
    want_scores = 0.5 * q64 @ k64.transpose(0, 1, 3, 2)
    np.testing.assert_allclose(scores, want_scores, rtol=1e-5, atol=1e-6)
    kept = np.broadcast_to(mask, want_scores.shape) != 0
    e = np.where(kept, np.exp(want_scores - want_scores.max(-1, keepdims=True)), 0.0)
    want_weights = e / e.sum(-1, keepdims=True)
    np.testing.assert_allclose(weights, want_weights, rtol=1e-5, atol=1e-6)
    assert (weights[1, :, :, 1:] == 0).all()  # the second example keeps one key
    np.testing.assert_allclose(context, want_weights @ k64, rtol=1e-5, atol=1e-6)
    e = np.exp(q64 - q64.max(1, keepdims=True))
    np.testing.assert_allclose(by_axis, e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(projected, q64 @ w, rtol=1e-5, atol=1e-5)


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


def test_recurrent_layers_fused_unrolled_and_looped_agree_on_padded_sequences():
    rng = np.random.RandomState(8)
    feed = {"x": rng.randn(3, 4, 5), "length": np.array([4, 2, 0], dtype=np.int64)}

    def run(kind, form):
        main, startup = rill.Program(), rill.Program()
        main.random_seed = 3
        with rill.program_guard(main, startup):
            x = layers.data("x", shape=[4, 5], dtype="float64")
            length = layers.data("length", shape=[], dtype="int64")
            outs = (layers.lstm if kind == "lstm" else layers.gru)(x, 6, length=length,
                                                                  form=form)
        assert list(outs[0].shape) == [-1, 4, 6] and list(outs[1].shape) == [-1, 6]
        return run_once(main, startup, feed, list(outs))[0]

    for kind in ("lstm", "gru"):
        fused, unrolled, looped = run(kind, "fused"), run(kind, "unrolled"), run(kind, "while")
        for a, b, c in zip(fused, unrolled, looped):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
            np.testing.assert_allclose(c, b, rtol=1e-12, atol=1e-14)
        out, last = fused[0], fused[1]
        assert np.all(out[1, 2:] == 0) and np.all(out[2] == 0)  # past each length
        np.testing.assert_array_equal(last[1], out[1, 1])  # the state at the last real step
        assert np.abs(out[0]).max() > 1e-3


def test_a_transformer_layer_trains_alike_on_both_executors():
    rng = np.random.RandomState(9)
    feeds = [{"x": rng.randn(4, 5, 8).astype(np.float32),
              "mask": (rng.rand(4, 1, 1, 5) > 0.3).astype(np.float32)} for _ in range(3)]
    losses = []
    for kind in ("reference", "parallel"):
        main, startup = rill.Program(), rill.Program()
        main.random_seed = 4
        with rill.program_guard(main, startup):
            x = layers.data("x", shape=[5, 8])
            mask = layers.data("mask", shape=[1, 1, 5])
            h = layers.transformer_encoder_layer(x, num_heads=2, ffn_hidden=16, key_mask=mask)
            h = layers.multi_head_attention(h, num_heads=4)
            loss = layers.mean(h * h)
            rill.optimizer.SGD(learning_rate=0.05).minimize(loss)
        scope = rill.Scope()
        rill.Executor().run(startup, scope=scope)
        if kind == "reference":
            exe = rill.Executor()
            step = lambda f: exe.run(main, feed=f, fetch_list=[loss], scope=scope)[0]
        else:
            exe = rill.ParallelExecutor(main, places="cpu", scope=scope)
            step = lambda f: exe.run([loss], feed=f)[0]
        losses.append([step(f).item() for f in feeds])
    assert losses[0] == losses[1], losses  # the actor executor gives the reference's bits
    assert losses[0][2] != losses[0][0]
