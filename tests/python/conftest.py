"""Shared fixtures of the Python front end's tests: the C++ reference helper
(python_reference, built with the tests; CTest passes its path) and the
programs it writes."""
import os
import subprocess

import pytest


def reference_binary():
    path = os.environ.get("RILL_PYTHON_REFERENCE")
    if not path:
        pytest.fail("RILL_PYTHON_REFERENCE is not set: run these tests through ctest")
    return path


def run_reference(*args):
    result = subprocess.run([reference_binary(), *map(str, args)], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    return result


@pytest.fixture(scope="session")
def cpp_programs(tmp_path_factory):
    """A function case -> (main bytes, startup bytes) of the C++ builder's programs."""
    directory = tmp_path_factory.mktemp("cpp_programs")
    run_reference("programs", directory)
    import rill

    def load(case):
        return (rill.load_program(str(directory / (case + ".main.pb"))).serialize(),
                rill.load_program(str(directory / (case + ".startup.pb"))).serialize())

    return load
