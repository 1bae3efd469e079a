"""Checkpoints: a program's persistable variables (parameters, optimizer
state, the learning rate) saved from a scope into one file with the training
step, and restored bit-exactly (rill/checkpoint.h; the files `rill train
--save` writes and `--resume` reads)."""
from rill import _core
from rill.executor import global_scope
from rill.framework import default_main_program


def save_checkpoint(path, program=None, scope=None, step=None):
    """Writes every persistable variable of `program` (default: the default
    main program) that holds a value in `scope` (default: global_scope()) to
    `path`, atomically, with `step` when given."""
    program = program if program is not None else default_main_program()
    _core.save_checkpoint(program, scope if scope is not None else global_scope(), path, step)


def load_checkpoint(path, program=None, scope=None):
    """Restores `program`'s persistable variables from `path` into `scope`,
    all or nothing (the file is checked against the program first); returns
    the saved step, or None."""
    program = program if program is not None else default_main_program()
    return _core.load_checkpoint(program, scope if scope is not None else global_scope(), path)
