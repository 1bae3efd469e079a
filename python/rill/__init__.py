"""Rill from Python, in PaddlePaddle Fluid's style.

    import numpy as np
    import rill

    main, startup = rill.Program(), rill.Program()
    with rill.program_guard(main, startup):
        x = rill.layers.data("x", shape=[784])
        label = rill.layers.data("label", shape=[1], dtype="int64")
        h = rill.layers.fc(x, size=128, act="relu")
        loss = rill.layers.mean(rill.layers.softmax_with_cross_entropy(rill.layers.fc(h, 10), label))
        rill.optimizer.SGD(learning_rate=0.1).minimize(loss)

    exe = rill.Executor()
    exe.run(startup)
    loss_value, = exe.run(main, feed={"x": xs, "label": ys}, fetch_list=[loss])

Every call goes to Rill's C++ API (rill._core binds it); nothing here
computes. A failed call raises a subclass of rill.Error named after Rill's
error code (rill.InvalidArgumentError, rill.NotFoundError, ...), with Rill's
message (block, op, variable).

Also here: rill.trace (what the actor executors did inside a `with` block,
its summary and visualizer page), rill.load_plugin (custom ops from a shared
library, appended with rill.layers.append_op) and rill.datasets (numpy
batches from Rill's readers and input pipeline) and rill.distributed (a
process group: collective data parallelism across processes).
"""
from rill._core import (Error, InvalidArgumentError, NotFoundError, OutOfRangeError, ParseError,
                        UnimplementedError, InternalError, IoError, TimeoutError, UnavailableError,
                        CancelledError, Scope, version)
from rill.framework import (Program, Variable, program_guard, default_main_program,
                            default_startup_program, load_program, save_program, load_plugin,
                            register_op)
from rill import layers
from rill import optimizer
from rill.optimizer import SGD, Momentum, Adam, append_backward
from rill.executor import (Executor, ParallelExecutor, ExecutionStrategy, BuildStrategy,
                           global_scope)
from rill.io import save_checkpoint, load_checkpoint
from rill.tracing import trace
from rill import datasets
from rill import distributed

__all__ = [
    "Error", "InvalidArgumentError", "NotFoundError", "OutOfRangeError", "ParseError",
    "UnimplementedError", "InternalError", "IoError", "TimeoutError", "UnavailableError",
    "CancelledError", "Scope", "Program", "Variable", "program_guard", "default_main_program",
    "default_startup_program", "load_program", "save_program", "layers", "optimizer", "SGD",
    "Momentum", "Adam", "append_backward", "Executor", "ParallelExecutor", "ExecutionStrategy",
    "BuildStrategy", "global_scope",
    "save_checkpoint", "load_checkpoint", "version", "trace", "datasets", "load_plugin", "register_op",
    "distributed"
]
