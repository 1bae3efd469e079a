"""Programs, variables and the program guard.

A Program is Rill's (rill._core.Program: an owned ProgramDesc). Layers append
to the programs of the innermost `program_guard`, or to the default main and
startup programs outside any guard, through a rill._core.Builder. Not
thread-safe: build programs from one thread.
"""
import contextlib
import os

from rill import _core

Program = _core.Program


class Variable:
    """A variable of a program being built: its name, shape and dtype.

    `a + b`, `a - b`, `a * b` and `a / b` append elementwise ops to the
    program `a` belongs to.
    """

    def __init__(self, var, builder):
        self._var = var
        self._builder = builder

    @property
    def name(self):
        return self._var.name

    @property
    def shape(self):
        return tuple(self._var.shape)

    @property
    def dtype(self):
        return self._var.dtype

    @property
    def builder(self):
        """The rill._core.Builder of the programs this variable belongs to."""
        return self._builder

    def _binary(self, method, other):
        if not isinstance(other, Variable):
            return NotImplemented
        return Variable(getattr(self._builder, method)(self._var, other._var, -1), self._builder)

    def __add__(self, other):
        return self._binary("add", other)

    def __sub__(self, other):
        return self._binary("sub", other)

    def __mul__(self, other):
        return self._binary("mul", other)

    def __truediv__(self, other):
        return self._binary("div", other)

    def __repr__(self):
        return "Variable(%s: %s%s)" % (self.name, self.dtype, list(self.shape))


_default_main = Program()
_default_startup = Program()
_guards = []  # (main, startup, builder), innermost last


def default_main_program():
    """The program layers append to outside any program_guard."""
    return _default_main


def default_startup_program():
    """The startup program (parameter initialisers) outside any program_guard."""
    return _default_startup


def _builder_for(main, startup):
    return _core.Builder(main, startup, main.random_seed)


def current_builder():
    """The Builder layers append with: the innermost guard's, or the defaults'."""
    if _guards:
        return _guards[-1][2]
    global _default_builder
    if _default_builder is None:
        _default_builder = _builder_for(_default_main, _default_startup)
    return _default_builder


_default_builder = None


@contextlib.contextmanager
def program_guard(main_program, startup_program=None):
    """Layers inside the `with` append to `main_program`, their initialisers to
    `startup_program` (a fresh Program when None). Both programs take
    main_program.random_seed as their seed: set it before the guard."""
    if startup_program is None:
        startup_program = Program()
    _guards.append((main_program, startup_program, _builder_for(main_program, startup_program)))
    try:
        yield
    finally:
        _guards.pop()


def save_program(program, path):
    """Writes `program` to a file `rill print` and `rill run` read (.pbtxt: text, else binary)."""
    program.save(path)


def load_program(path):
    """Reads a program file (text or binary, by extension)."""
    return Program.load(path)


def register_op(type, inputs, outputs, kernel, infer_shape=None, doc="", grad=None,
                no_grad=()):
    """Registers op `type` whose CPU kernel is the Python function `kernel`,
    for programs of this process (append it with rill.layers.append_op):
    kernel(**{input slot: ndarray}) returns the output (one output slot) or
    {output slot: ndarray}. infer_shape(**{input slot: (shape, dtype)})
    returns {output slot: (shape, dtype)} (-1 for the batch); without it
    every output has the first input's shape and dtype.

    With `grad`, the op has a gradient (op "<type>_grad"), so append_backward
    and the optimizers differentiate through it: grad(**{input slot: ndarray,
    output slot: ndarray, output slot + "_grad": ndarray}) returns the
    gradient of the one differentiable input, or {input slot: ndarray} for
    several, each shaped like its input. An output no gradient reached comes
    as zeros. Inputs named in `no_grad` (labels, indices) get none. Without
    `grad` the op stops gradients.

    Executor threads take the GIL to call these functions (a step otherwise
    runs without it): a Python op serializes with the interpreter, which is
    what it costs. An exception, or a gradient of the wrong shape, comes back
    from the run as rill.InvalidArgumentError naming the op; a type that exists
    is refused.

        rill.register_op("cube", ["X"], ["Out"], lambda X: X ** 3,
                         grad=lambda X, Out, Out_grad: 3 * X ** 2 * Out_grad)
    """
    _core.register_python_op(type, list(inputs), list(outputs), kernel, infer_shape, doc, grad,
                             list(no_grad))


def load_plugin(path):
    """Loads a plugin library of custom ops (a shared library with a
    RILL_PLUGIN block, rill/plugin.h; `rill --plugin` in the command) so that
    programs can use its ops (rill.layers.append_op). Returns the op types it
    registered; loading the same file again does nothing. A missing or
    unloadable file raises rill.NotFoundError, one that is not a plugin (or
    was built for an incompatible Rill, or registers a type that exists)
    rill.InvalidArgumentError; both name the path."""
    return _core.load_plugin(os.fspath(path))
