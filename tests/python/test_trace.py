"""rill.trace: the steps run inside the block, and only those, recorded by an
executor built before it; the summary and the page are what the rill command
makes of the same file."""
import json
import os
import subprocess

import numpy as np
import pytest

import rill
from rill import layers


def build():
    main, startup = rill.Program(), rill.Program()
    main.random_seed = 7
    with rill.program_guard(main, startup):
        x = layers.data("x", shape=[8])
        label = layers.data("label", shape=[1], dtype="int64")
        logits = layers.fc(layers.fc(x, size=16, act="relu"), 4)
        loss = layers.mean(layers.softmax_with_cross_entropy(logits, label))
        rill.optimizer.SGD(learning_rate=0.1).minimize(loss)
    return main, startup, loss


def feed(step):
    rng = np.random.RandomState(step)
    return {"x": rng.randn(8, 8).astype(np.float32),
            "label": rng.randint(0, 4, size=(8, 1)).astype(np.int64)}


def executor(places="cpu:2"):
    main, startup, loss = build()
    scope = rill.Scope()
    rill.Executor().run(startup, scope=scope)
    return rill.ParallelExecutor(main, places=places, scope=scope), loss


def events(path, category):
    with open(path) as f:
        return [e for e in json.load(f)["traceEvents"] if e.get("cat") == category]


def cli(*args):
    result = subprocess.run([os.environ["RILL_CLI"], *map(str, args)], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_a_block_records_its_steps_on_both_places_and_nothing_outside(tmp_path):
    exe, loss = executor()  # built before the block
    other, other_loss = executor()  # built before, never run inside
    exe.run([loss], feed=feed(0))
    other.run([other_loss], feed=feed(0))
    path = tmp_path / "trace.json"
    with rill.trace(path):
        for step in range(1, 4):
            exe.run([loss], feed=feed(step))
    exe.run([loss], feed=feed(4))  # after the block: not recorded

    iterations = events(path, "iteration")
    assert len(iterations) == 3
    assert {e["args"]["graph"] for e in iterations} == {0}
    summary = rill.trace.summarize(path)
    assert summary["iterations"]["count"] == 3
    assert summary["iterations"]["graph"] == 0
    places = {s["place"] for s in summary["streams"] if s["kernels"] > 0}
    assert places == {0, 1}
    # Only the executor that ran: its lanes alone (two places, ops on each).
    assert len(json.load(open(path))["rill"]["graphs"]) == 1


def test_each_block_writes_its_own_steps(tmp_path):
    exe, loss = executor()
    for block, steps in enumerate([2, 5, 1]):
        path = tmp_path / ("block%d.json" % block)
        with rill.trace(path):
            for step in range(steps):
                exe.run([loss], feed=feed(step))
        assert rill.trace.summarize(path)["iterations"]["count"] == steps
        assert len(events(path, "iteration")) == steps


def test_an_executor_built_inside_a_block_is_traced_and_nested_blocks_see_their_own(tmp_path):
    outer, inner = tmp_path / "outer.json", tmp_path / "inner.json"
    with rill.trace(outer):
        exe, loss = executor(places="cpu")
        exe.run([loss], feed=feed(0))
        with rill.trace(inner):
            exe.run([loss], feed=feed(1))
        exe.run([loss], feed=feed(2))  # the outer block is still open: recorded
    assert len(events(outer, "iteration")) == 3
    assert len(events(inner, "iteration")) == 1
    exe.run([loss], feed=feed(3))
    assert len(events(outer, "iteration")) == 3


def test_the_file_is_written_when_the_block_raises(tmp_path):
    exe, loss = executor()
    path = tmp_path / "failed.json"
    with pytest.raises(rill.NotFoundError):
        with rill.trace(path):
            exe.run([loss], feed=feed(0))
            exe.run(["no_such_var"], feed=feed(1))
    assert len(events(path, "iteration")) == 1


def test_the_summary_is_what_rill_trace_summarize_prints(tmp_path):
    exe, loss = executor()
    path = tmp_path / "trace.json"
    with rill.trace(path):
        for step in range(3):
            exe.run([loss], feed=feed(step))
    assert rill.trace.summarize(path) == json.loads(cli("trace", "summarize", "--json", path))
    assert rill.trace.summarize(path, top=2) == json.loads(
        cli("trace", "summarize", "--json", "--top", 2, path))


def test_the_page_is_what_rill_trace_view_writes(tmp_path):
    if not os.path.isfile(rill._core.visualizer_page_built):
        pytest.skip("the visualizer page is not built (npm not found)")
    exe, loss = executor()
    path = tmp_path / "trace.json"
    with rill.trace(path):
        exe.run([loss], feed=feed(0))
    page = rill.trace.view(path)
    assert page == str(tmp_path / "trace.html")
    cli("trace", "view", path, "--out", tmp_path / "cli.html")
    got, want = open(page, "rb").read(), open(tmp_path / "cli.html", "rb").read()
    assert got == want
    assert b'"traceEvents"' in got


def test_bad_files_raise_rills_errors_with_the_path(tmp_path):
    missing = tmp_path / "missing.json"
    with pytest.raises(rill.Error, match="missing.json"):
        rill.trace.summarize(missing)
    not_a_trace = tmp_path / "program.json"
    not_a_trace.write_text('{"blocks": []}')
    with pytest.raises(rill.Error, match="program.json"):
        rill.trace.summarize(not_a_trace)
    with pytest.raises(rill.Error, match="no_such_dir"):
        with rill.trace(tmp_path / "no_such_dir" / "trace.json"):
            pass
    with pytest.raises(rill.InvalidArgumentError, match="out_html"):
        rill.trace.view(missing, missing)
