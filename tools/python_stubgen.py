"""Writes the type stubs of rill._core (python/rill/_core.pyi) from the
signatures pybind11 puts in the module's docstrings, so editors and type
checkers know the extension module. tests/python/test_stubs.py fails when the
checked-in stubs no longer match the built module; to write them again:

    PYTHONPATH=build/python /usr/bin/python3 tools/python_stubgen.py > python/rill/_core.pyi
"""
import inspect
import re
import sys

HEADER = '''"""Type stubs of rill._core, Rill's C++ API bound with pybind11 (written by
tools/python_stubgen.py; the package's own modules are plain Python)."""
from typing import Any, List, Optional, Set, Tuple, Union

import numpy

'''


def _clean(text):
    text = text.replace("rill._core.", "")
    text = re.sub(r"rill::python::\(anonymous namespace\)::", "", text)
    # Defaults as pybind11 prints them (0.8999999761581421, set()) say less than "...".
    text = re.sub(r" = (?:[^,()\[\]]|\([^()]*\))+", " = ...", text)
    return text


def _signature(obj):
    """The first line of a pybind11 docstring: name(args) -> result."""
    doc = (obj.__doc__ or "").strip().splitlines()
    return _clean(doc[0]) if doc else ""


def _doc_body(obj):
    lines = (obj.__doc__ or "").strip().splitlines()
    body = " ".join(line.strip() for line in lines[1:] if line.strip())
    return body


def _function(name, obj, indent, static=False):
    sig = _signature(obj)
    match = re.match(r"^\w+(\(.*\)) -> (.+)$", sig)
    if not match:
        return "%sdef %s(*args: Any, **kwargs: Any) -> Any: ...\n" % (indent, name)
    args, result = match.groups()
    out = "%s@staticmethod\n" % indent if static else ""
    return out + "%sdef %s%s -> %s: ...\n" % (indent, name, args, result)


def _property(name, prop, indent):
    result = "Any"
    if prop.fget is not None:
        match = re.search(r"-> (.+)$", _signature(prop.fget))
        if match:
            result = match.group(1)
    text = "%s@property\n%sdef %s(self) -> %s: ...\n" % (indent, indent, name, result)
    if prop.fset is not None:
        text += "%s@%s.setter\n%sdef %s(self, value: %s) -> None: ...\n" % (
            indent, name, indent, name, result)
    return text


def _class(name, cls):
    bases = [b.__name__ for b in cls.__bases__ if b.__module__ == "rill._core"]
    if issubclass(cls, BaseException):
        bases = [b.__name__ for b in cls.__bases__]
    text = "class %s%s:\n" % (name, "(%s)" % ", ".join(bases) if bases else "")
    if cls.__doc__ and not issubclass(cls, BaseException):
        text += '    """%s"""\n' % cls.__doc__.strip().replace('"""', "'''")
    members = ""
    for member, raw in sorted(vars(cls).items()):
        if member.startswith("_") and member != "__init__":
            continue
        if isinstance(raw, property):
            members += _property(member, raw, "    ")
        elif isinstance(raw, staticmethod):
            members += _function(member, raw.__func__, "    ", static=True)
        elif callable(raw):
            if member == "__init__" and not _signature(raw).startswith("__init__("):
                continue  # no constructor from Python
            members += _function(member, getattr(cls, member), "    ",
                                 static=inspect.isbuiltin(getattr(cls, member)) and
                                 "self:" not in _signature(raw))
    return text + (members or "    ...\n")


def stubs(module):
    text = HEADER
    names = sorted(n for n in vars(module) if not n.startswith("_"))
    for name in names:
        obj = getattr(module, name)
        if inspect.isclass(obj):
            text += "\n" + _class(name, obj)
    text += "\n"
    for name in names:
        obj = getattr(module, name)
        if not inspect.isclass(obj) and callable(obj):
            text += _function(name, obj, "")
        elif isinstance(obj, str):
            text += "%s: str\n" % name
    return text


if __name__ == "__main__":
    import rill._core
    sys.stdout.write(stubs(rill._core))
