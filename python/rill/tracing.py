"""Tracing from Python: what the actor executors did inside a `with` block.

    exe = rill.ParallelExecutor(main, places="cpu:2")
    exe.run([loss], feed=batch)                 # not recorded
    with rill.trace("trace.json"):
        for batch in batches:
            exe.run([loss], feed=batch)         # recorded
    summary = rill.trace.summarize("trace.json")   # rill trace summarize --json
    rill.trace.view("trace.json", "trace.html")    # rill trace view

Every rill.ParallelExecutor records into one recorder of the process
(rill._core.TraceRecorder.for_process(), RILL_TRACE's when that is set),
off until a block switches it on, so executors built before the block are
traced too. The file holds the iterations begun inside the block, with only
the executors that ran them (graph 0: the first of them built), in the
format of `rill train --trace` (actors/trace/trace_format.md). The recorder
keeps what it recorded until the process ends, up to 2^21 events in all
(RILL_TRACE_MAX_EVENTS with RILL_TRACE); past that, events are dropped, and
each file says how many the process dropped so far. Only the actor executor
records (rill.Executor, the reference one, does not). Blocks may nest or
overlap across threads: the recorder is on while any is open.
"""
import json
import os
import threading

from rill import _core

_lock = threading.Lock()
_open_blocks = 0  # guarded by _lock
_was_on = False  # guarded by _lock: the recorder was on before the first open block (RILL_TRACE)


class trace:
    """A context manager that traces the steps run inside it into `path`.

    The file is written when the block ends, also when it ends with an
    exception; a file that cannot be written raises rill.InvalidArgumentError.
    """

    def __init__(self, path):
        self.path = os.fspath(path)
        self._since_ns = None

    def __enter__(self):
        global _open_blocks, _was_on
        recorder = _core.TraceRecorder.for_process()
        with _lock:
            if _open_blocks == 0:
                _was_on = recorder.on
            _open_blocks += 1
            self._since_ns = _core.TraceRecorder.now()
            recorder.start()
        return self

    def __exit__(self, *exc_info):
        global _open_blocks
        recorder = _core.TraceRecorder.for_process()
        with _lock:
            _open_blocks -= 1
            if _open_blocks == 0 and not _was_on:
                recorder.stop()
        recorder.write_file(self.path, self._since_ns)
        return False

    @staticmethod
    def summarize(path, graph=None, iteration=None, top=10):
        """What `rill trace summarize --json PATH` prints, as a dict: busy time
        per lane and stream, messages, waits, the top ops, iterations, the
        critical path and the time split (tools/rill/trace_summary.h lists the
        keys). `graph` and `iteration` pick the critical path's (default: graph
        0's median iteration); `top` bounds the ops listed."""
        text = _core.summarize_trace(os.fspath(path), -1 if graph is None else graph,
                                     -1 if iteration is None else iteration, top)
        return json.loads(text)

    @staticmethod
    def view(path, out_html=None, template=None):
        """Writes the visualizer page with the trace at `path` embedded (`rill
        trace view`): one HTML file that works offline. `out_html` defaults to
        `path` with .html; `template` (the built visualizer page) to
        $RILL_VISUALIZER_HTML, else the installed page, else the build's.
        Returns the page's path."""
        path = os.fspath(path)
        if out_html is None:
            out_html = os.path.splitext(path)[0] + ".html"
        out_html = os.fspath(out_html)
        if os.path.abspath(out_html) == os.path.abspath(path):
            raise _core.InvalidArgumentError("rill.trace.view: out_html must differ from " + path)
        _core.write_trace_view(path, os.fspath(template or _default_template()), out_html)
        return out_html


def _default_template():
    from_environment = os.environ.get("RILL_VISUALIZER_HTML")
    if from_environment:
        return from_environment
    installed = os.path.normpath(os.path.join(os.path.dirname(_core.__file__),
                                              _core.visualizer_page_installed))
    if os.path.isfile(installed):
        return installed
    return _core.visualizer_page_built
