"""The type stubs of rill._core (python/rill/_core.pyi, for editors and type
checkers) say what the built module has: tools/python_stubgen.py, run on it
now, writes the same file. If this fails after a change of the bindings,
write them again as the generator's docstring says."""
import importlib.util
import pathlib

import rill._core

ROOT = pathlib.Path(__file__).resolve().parents[2]


def load_generator():
    spec = importlib.util.spec_from_file_location("python_stubgen",
                                                  ROOT / "tools" / "python_stubgen.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_checked_in_stubs_match_the_built_module():
    want = load_generator().stubs(rill._core)
    got = (ROOT / "python" / "rill" / "_core.pyi").read_text()
    assert got == want, ("python/rill/_core.pyi is stale: PYTHONPATH=build/python python3 "
                         "tools/python_stubgen.py > python/rill/_core.pyi")


def test_every_public_name_of_the_module_has_a_stub():
    text = (ROOT / "python" / "rill" / "_core.pyi").read_text()
    for name in dir(rill._core):
        if name.startswith("_"):
            continue
        assert ("class %s" % name) in text or ("def %s(" % name) in text or \
            ("%s:" % name) in text, name


def test_the_package_marks_itself_typed():
    package = pathlib.Path(rill._core.__file__).parent
    assert (package / "py.typed").exists()
    assert (package / "_core.pyi").exists()
