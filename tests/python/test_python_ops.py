"""rill.register_op: an op whose kernel (and shape function) are Python
functions runs in programs on both executors with the numbers numpy computes;
what it raises comes back as rill.InvalidArgumentError naming the op."""
import re

import numpy as np
import pytest

import rill
from rill import layers

KINDS = ["reference", "parallel"]

rill.register_op("py_test_cube", ["X"], ["Out"], lambda X: X ** 3)
rill.register_op(
    "py_test_row_stats", ["X"], ["Sum", "Max"],
    lambda X: {"Sum": X.sum(axis=1, keepdims=True), "Max": X.max(axis=1, keepdims=True)},
    infer_shape=lambda X: {"Sum": ([X[0][0], 1], X[1]), "Max": ([X[0][0], 1], X[1])})


def fail(X):
    raise ValueError("the kernel refuses")


rill.register_op("py_test_fail", ["X"], ["Out"], fail)


def run(kind, main, startup, feed, fetches):
    scope = rill.Scope()
    rill.Executor().run(startup, scope=scope)
    if kind == "reference":
        return rill.Executor().run(main, feed=feed, fetch_list=fetches, scope=scope)
    return rill.ParallelExecutor(main, places="cpu:2", scope=scope).run(feed=feed,
                                                                         fetch_list=fetches)


@pytest.mark.parametrize("kind", KINDS)
def test_python_kernels_compute_what_numpy_does(kind):
    main, startup = rill.Program(), rill.Program()
    with rill.program_guard(main, startup):
        x = layers.data("x", shape=[3])
        cubed = layers.append_op("py_test_cube", inputs={"X": x}, outputs={"Out": 1})
        total, largest = layers.append_op("py_test_row_stats", inputs={"X": cubed + x},
                                          outputs={"Sum": 1, "Max": 1})
    assert list(total.shape) == [-1, 1] and list(largest.shape) == [-1, 1]
    data = np.random.RandomState(1).randn(4, 3).astype(np.float32)
    got_cubed, got_total, got_largest = run(kind, main, startup, {"x": data},
                                            [cubed, total, largest])
    np.testing.assert_allclose(got_cubed, data ** 3, rtol=1e-6)
    both = data ** 3 + data
    np.testing.assert_allclose(got_total, both.sum(axis=1, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(got_largest, both.max(axis=1, keepdims=True), rtol=1e-6)


@pytest.mark.parametrize("kind", KINDS)
def test_a_raising_kernel_raises_naming_the_op_every_step(kind):
    main, startup = rill.Program(), rill.Program()
    with rill.program_guard(main, startup):
        x = layers.data("x", shape=[3])
        out = layers.append_op("py_test_fail", inputs={"X": x}, outputs={"Out": 1})
    scope = rill.Scope()
    if kind == "reference":
        exe = rill.Executor()
        step = lambda: exe.run(main, feed=data, fetch_list=[out], scope=scope)  # noqa: E731
    else:
        exe = rill.ParallelExecutor(main, places="cpu:2", scope=scope)
        step = lambda: exe.run(feed=data, fetch_list=[out])  # noqa: E731
    data = {"x": np.ones((2, 3), np.float32)}
    for _ in range(2):  # the executor stays usable: the next step fails the same way
        with pytest.raises(rill.InvalidArgumentError, match="py_test_fail raised: ValueError"):
            step()


def test_a_type_that_exists_is_refused():
    with pytest.raises(rill.InvalidArgumentError, match="py_test_cube"):
        rill.register_op("py_test_cube", ["X"], ["Out"], lambda X: X)
    with pytest.raises(rill.InvalidArgumentError, match="mul"):
        rill.register_op("mul", ["X"], ["Out"], lambda X: X)


def test_a_raising_shape_function_is_refused_where_the_op_is_appended():
    def no_shapes(X):
        raise ValueError("no shapes today")

    rill.register_op("py_test_no_shapes", ["X"], ["Out"], lambda X: X, infer_shape=no_shapes)
    main, startup = rill.Program(), rill.Program()
    with rill.program_guard(main, startup):
        x = layers.data("x", shape=[3])
        with pytest.raises(rill.InvalidArgumentError,
                           match="shape function of op py_test_no_shapes raised: ValueError"):
            layers.append_op("py_test_no_shapes", inputs={"X": x}, outputs={"Out": 1})


def test_a_kernel_that_leaves_out_an_output_is_refused_naming_the_op():
    rill.register_op("py_test_half", ["X"], ["A", "B"], lambda X: {"A": X})
    main, startup = rill.Program(), rill.Program()
    with rill.program_guard(main, startup):
        x = layers.data("x", shape=[3])
        a, b = layers.append_op("py_test_half", inputs={"X": x}, outputs={"A": 1, "B": 1})
    with pytest.raises(rill.InvalidArgumentError,
                       match="kernel of op py_test_half raised: KeyError"):
        run("reference", main, startup, {"x": np.ones((2, 3), np.float32)}, [a, b])


# Gradients: x * tanh(x) as a Python op with its derivative, against the same
# function of built-in ops; a scale input that gets no gradient; a gradient
# of the wrong shape.
def x_tanh_x_grad(X, Out, Out_grad):
    t = np.tanh(X)
    return (t + X * (1 - t * t)) * Out_grad


rill.register_op("py_test_x_tanh_x", ["X"], ["Out"], lambda X: X * np.tanh(X),
                 grad=x_tanh_x_grad)
rill.register_op("py_test_scaled", ["X", "Scale"], ["Out"], lambda X, Scale: X * Scale,
                 grad=lambda X, Scale, Out, Out_grad: Out_grad * Scale, no_grad=["Scale"])
rill.register_op("py_test_bad_grad", ["X"], ["Out"], lambda X: X * 2,
                 grad=lambda X, Out, Out_grad: Out_grad[:, :1])


def trained(kind, python_op, steps=5):
    """fc -> x tanh(x) (the Python op or built-in ops) -> scaled by a fed
    vector -> fc -> mean, SGD; the parameters after `steps` steps."""
    main, startup = rill.Program(), rill.Program()
    main.random_seed = 7
    with rill.program_guard(main, startup):
        x = layers.data("x", shape=[5])
        scale = layers.data("scale", shape=[4])
        h = layers.fc(x, size=4)
        if python_op:
            act = layers.append_op("py_test_x_tanh_x", inputs={"X": h}, outputs={"Out": 1})
            act = layers.append_op("py_test_scaled", inputs={"X": act, "Scale": scale},
                                   outputs={"Out": 1})
        else:
            act = h * layers.tanh(h) * scale
        loss = layers.mean(layers.fc(act, size=1))
        rill.optimizer.SGD(learning_rate=0.5).minimize(loss)
    scope = rill.Scope()
    rill.Executor().run(startup, scope=scope)
    exe = (rill.Executor() if kind == "reference"
           else rill.ParallelExecutor(main, places="cpu:2", scope=scope))
    rng = np.random.RandomState(3)
    for _ in range(steps):
        feed = {"x": rng.randn(8, 5).astype(np.float32),
                "scale": rng.rand(8, 4).astype(np.float32) + 0.5}
        if kind == "reference":
            exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
        else:
            exe.run(feed=feed, fetch_list=[loss])
    return {n: scope.get(n) for n in scope.var_names() if re.fullmatch(r"fc_\d+\.[wb]", n)}


@pytest.mark.parametrize("kind", KINDS)
def test_a_python_gradient_trains_as_the_same_function_of_built_in_ops(kind):
    want = trained("reference", python_op=False)
    got = trained(kind, python_op=True)
    assert set(got) == set(want) and len(want) == 4, sorted(got)
    start = trained("reference", python_op=False, steps=0)
    for name in want:
        assert not np.array_equal(want[name], start[name]), name  # they trained
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-6, err_msg=name)


def test_a_gradient_of_the_wrong_shape_is_refused_naming_the_op():
    main, startup = rill.Program(), rill.Program()
    with rill.program_guard(main, startup):
        x = layers.data("x", shape=[3])
        out = layers.append_op("py_test_bad_grad", inputs={"X": layers.fc(x, size=3)},
                               outputs={"Out": 1})
        rill.optimizer.SGD(learning_rate=0.1).minimize(layers.mean(out))
    scope = rill.Scope()
    rill.Executor().run(startup, scope=scope)
    with pytest.raises(rill.InvalidArgumentError, match="py_test_bad_grad.*must be"):
        rill.Executor().run(main, feed={"x": np.ones((2, 3), np.float32)}, scope=scope)


def test_no_grad_must_name_an_input():
    with pytest.raises(rill.InvalidArgumentError, match="not an input"):
        rill.register_op("py_test_no_such_input", ["X"], ["Out"], lambda X: X,
                         grad=lambda X, Out, Out_grad: Out_grad, no_grad=["Y"])
