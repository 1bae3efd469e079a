"""rill.load_plugin: a plugin's ops (tests/runtime's cube_plugin, built from
examples/custom_op/cube_op.cc) run in Python programs with the numbers numpy
computes; bad paths raise rill.Error subclasses naming them."""
import os

import numpy as np
import pytest

import rill
from rill import layers


def plugin(name):
    path = os.environ.get(name)
    if not path:
        pytest.fail(name + " is not set: run these tests through ctest")
    return path


def cube_program():
    main, startup = rill.Program(), rill.Program()
    main.random_seed = 3
    with rill.program_guard(main, startup):
        x = layers.data("x", shape=[4])
        h = layers.fc(x, size=5)
        cubed = layers.append_op("cube", inputs={"X": h}, outputs={"Out": 1})
        loss = layers.mean(cubed)
        rill.append_backward(loss)
    return main, startup, h, cubed, loss


def test_a_plugins_op_computes_what_numpy_does_forward_and_backward():
    assert set(rill.load_plugin(plugin("RILL_CUBE_PLUGIN"))) == {"cube", "cube_grad"}
    rill.load_plugin(plugin("RILL_CUBE_PLUGIN"))  # again: nothing happens
    main, startup, h, cubed, loss = cube_program()
    assert "cube" in main.op_types() and "cube_grad" in main.op_types()
    x = np.random.RandomState(0).randn(6, 4).astype(np.float32)
    scope = rill.Scope()
    rill.Executor().run(startup, scope=scope)
    got_h, got_cubed, got_grad = rill.Executor().run(
        main, feed={"x": x}, fetch_list=[h, cubed, h.name + "@GRAD"], scope=scope)
    want_h = x @ scope.get("fc_0.w") + scope.get("fc_0.b")
    np.testing.assert_allclose(got_h, want_h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_cubed, want_h ** 3, rtol=1e-5, atol=1e-6)
    # mean's gradient is 1 / (6 * 5) per element; cube's, 3 h^2 times it.
    np.testing.assert_allclose(got_grad, 3 * want_h ** 2 / 30, rtol=1e-5, atol=1e-7)

    # The actor executor on two places runs the plugin's kernels too.
    exe = rill.ParallelExecutor(main, places="cpu:2", scope=scope)
    (parallel_cubed,) = exe.run([cubed], feed={"x": x})
    np.testing.assert_allclose(parallel_cubed, want_h ** 3, rtol=1e-5, atol=1e-6)


def test_a_missing_file_raises_not_found_with_the_path(tmp_path):
    path = str(tmp_path / "libno_such_plugin.so")
    with pytest.raises(rill.NotFoundError, match="libno_such_plugin.so"):
        rill.load_plugin(path)


def test_a_library_that_is_not_a_plugin_raises_invalid_argument_with_the_path():
    path = plugin("RILL_NOT_A_PLUGIN")
    with pytest.raises(rill.InvalidArgumentError, match="is not a Rill plugin") as raised:
        rill.load_plugin(path)
    assert path in str(raised.value)


def test_an_unknown_op_type_is_refused_when_appended():
    with rill.program_guard(rill.Program(), rill.Program()):
        x = layers.data("x", shape=[4])
        with pytest.raises(rill.Error, match="no_such_op"):
            layers.append_op("no_such_op", inputs={"X": x}, outputs={"Out": 1})
