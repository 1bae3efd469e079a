#!/usr/bin/env bash
# The installed Python package: installs the build to a temporary prefix and,
# with only <prefix>/<site dir> on PYTHONPATH, imports rill from there (not
# from the build tree), with the installed librill, runs a program on both executors,
# and finds the installed visualizer page.
#
#   install_test.sh BUILD_DIR WORK PYTHON SITE_DIR
set -euo pipefail
build=$1 work=$2 python=$3 site=$4
rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
cd "$work"
PYTHONPATH=$prefix/$site "$python" - "$prefix" <<'PY'
import sys
import numpy as np
import rill

prefix = sys.argv[1]
assert rill.__file__.startswith(prefix), rill.__file__
assert rill._core.__file__.startswith(prefix), rill._core.__file__
with open("/proc/self/maps") as maps:
    libraries = {line.split()[-1] for line in maps if "librill.so" in line}
assert libraries and all(path.startswith(prefix) for path in libraries), libraries
main, startup = rill.Program(), rill.Program()
with rill.program_guard(main, startup):
    x = rill.layers.data("x", shape=[3])
    y = rill.layers.scale(x, scale=2.0)
data = np.full((2, 3), 1.5, np.float32)
out = rill.Executor().run(main, feed={"x": data}, fetch_list=[y])[0]
parallel = rill.ParallelExecutor(main, places="cpu:2").run([y], feed={"x": data})[0]
assert (out == 3.0).all() and (parallel == 3.0).all(), (out, parallel)
# rill.trace.view's default page is the installed one, found from the module.
import os
page = os.path.join(prefix, "share", "rill", "visualizer", "index.html")
if os.path.exists(page):
    os.environ.pop("RILL_VISUALIZER_HTML", None)
    assert os.path.samefile(rill.tracing._default_template(), page), rill.tracing._default_template()
print("installed rill", rill.version, "from", rill.__file__)
PY
