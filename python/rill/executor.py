"""Running programs: the reference Executor and the actor ParallelExecutor.

`run` takes feeds as {name: ndarray} (the array's dtype must be the
variable's; a C-contiguous, aligned array is read in place, without a copy,
so it must not change until the step is done: `run` returned, or `run_async`'s
result is ready; any other array is copied first) and returns the fetched
variables as ndarrays that own their memory. The GIL is released while a step runs, so other Python
threads go on. A failed step raises a rill.Error subclass with Rill's message;
the executor stays usable. Ctrl-C raises KeyboardInterrupt: the reference
Executor stops its step before the next op (within about 50 ms; the scope
keeps what the ops before wrote), a wait for `run_async`'s result ends at once
(the step finishes on its own), and ParallelExecutor.run raises it when its
step ends; the executor stays usable.
"""
from rill import _core
from rill.framework import default_main_program

_global_scope = _core.Scope()


def global_scope():
    """The scope executors use when none is given."""
    return _global_scope


ExecutionStrategy = _core.ExecutionStrategy
BuildStrategy = _core.BuildStrategy


def _with(given, kind, name, **shorthands):
    """`given` (a `kind`; the executor copies it), or a new `kind` with the
    shorthands that are not None set."""
    chosen = {k: v for k, v in shorthands.items() if v is not None}
    if given is None:
        made = kind()
        for field, value in chosen.items():
            setattr(made, field, value)
        return made
    if chosen:
        raise ValueError("give %s= or %s, not both" % (name, ", ".join(k + "=" for k in chosen)))
    if not isinstance(given, kind):
        raise TypeError("%s must be a rill.%s" % (name, kind.__name__))
    return given


def _names(fetch_list):
    return [f if isinstance(f, str) else f.name for f in (fetch_list or [])]


class Executor:
    """The sequential reference executor (every other executor must match it).

    It prepares each (program, scope) once and again only if the program
    changed since, and holds both while it lives."""

    def __init__(self, place="cpu"):
        self._executor = _core.Executor(place)

    def run(self, program=None, feed=None, fetch_list=None, scope=None):
        """Runs `program` (default: the default main program) once in `scope`
        (default: global_scope()); returns the fetched values as ndarrays."""
        program = program if program is not None else default_main_program()
        scope = scope if scope is not None else _global_scope
        return self._executor.run(program, scope, dict(feed or {}), _names(fetch_list))


class ParallelExecutor:
    """Rill's actor executor: the program's ops run out of order on a pool of
    threads, with the numbers of the reference executor. Its settings are an
    ExecutionStrategy (`exec_strategy=`; `num_threads=` is a shorthand for its
    field) and a BuildStrategy (`build_strategy=`; `strategy=` and
    `gradient_compression=` are shorthands for reduce_strategy and
    gradient_compression); a shorthand and the object together are refused.
    With several places ("cpu:2", or a list such as ["acpu:0", "acpu:1"])
    each runs the program on its slice of the batch and the gradients are
    merged.

    `scope` (default: global_scope()) holds the parameters: run the startup
    program in it first.

    `strategy` is how places merge gradients: "allreduce" (every place
    updates its copy) or "reduce" (each parameter updated once, on its owner
    place). `gradient_compression` ("none", "int8", "int4") quantizes large
    float32 gradients for the merges, with error feedback.

    With `process_group` (rill.distributed.ProcessGroup) this process is one
    rank of a collective job: the executor starts from rank 0's persistable
    variables (broadcast now, so every rank must build its executor) and
    averages the gradients over the ranks before the optimizer. Several
    places per rank need strategy="reduce" (the places reduce into one copy,
    which the rank merges once)."""

    def __init__(self, program=None, places="cpu", scope=None, num_threads=None,
                 strategy=None, gradient_compression=None, process_group=None,
                 exec_strategy=None, build_strategy=None):
        program = program if program is not None else default_main_program()
        scope = scope if scope is not None else _global_scope
        group = process_group._group if process_group is not None else None
        exec_strategy = _with(exec_strategy, ExecutionStrategy, "exec_strategy",
                              num_threads=num_threads)
        build_strategy = _with(build_strategy, BuildStrategy, "build_strategy",
                               reduce_strategy=strategy,
                               gradient_compression=gradient_compression)
        self._executor = _core.ParallelExecutor(program, scope, places, exec_strategy,
                                                build_strategy, group)

    def run(self, fetch_list=None, feed=None):
        """Runs one step; returns the fetched values as ndarrays (losses averaged
        over the places, per-example values concatenated)."""
        return self._executor.run(dict(feed or {}), _names(fetch_list))

    def run_async(self, fetch_list=None, feed=None):
        """Starts one step and returns at once (after waiting while as many steps
        as the executor allows are in flight) with a handle whose result()
        gives what run() would, and done() says whether it has finished. A bad
        feed raises here; a failure while the step runs, from result()."""
        return self._executor.run_async(dict(feed or {}), _names(fetch_list))
