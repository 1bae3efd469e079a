#!/usr/bin/env bash
# Installs the build in ${RILL_BUILD_DIR:-build} to a temporary prefix and uses
# it from outside the tree: builds examples/custom_op with find_package(Rill)
# and runs its gradient check, runs the installed `rill` with the plugin on a
# program file, compiles the check again with pkg-config, builds and runs the
# embedding trainer (examples/embedding: the loss goes down, it resumes from
# its checkpoint, refuses one beyond its last step, it traces a step), and
# embeds a trace in the installed visualizer page (when it was built).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${RILL_BUILD_DIR:-build}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

cmake --install "$build" --prefix "$prefix" >/dev/null
echo "installed to $prefix: $("$prefix/bin/rill" --version)"

cmake -S examples/custom_op -B "$work/custom_op" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_CXX_FLAGS="-Wall -Wextra -Werror" >/dev/null
cmake --build "$work/custom_op" -j "${RILL_JOBS:-2}" >/dev/null
plugin=$work/custom_op/libcube_op.so
"$work/custom_op/check_cube" "$plugin"

cat >"$work/cube.pbtxt" <<'PROG'
blocks {
  idx: 0 parent_idx: -1
  vars { name: "x" kind: DENSE_TENSOR dtype: FLOAT32 shape: [3] stop_gradient: true }
  vars { name: "y" kind: DENSE_TENSOR dtype: FLOAT32 shape: [3] }
  ops { type: "fill_constant" outputs { name: "Out" vars: "x" }
        attrs { name: "shape" ints { values: [3] } } attrs { name: "dtype" s: "float32" }
        attrs { name: "value" f: 2 } }
  ops { type: "cube" inputs { name: "X" vars: "x" } outputs { name: "Out" vars: "y" } }
}
PROG
out=$("$prefix/bin/rill" --plugin "$plugin" run "$work/cube.pbtxt" --fetch y --out "$work" \
  --trace "$work/cube_trace.json")
echo "$out"
grep -q "y: float32\[3\] = \[8, 8, 8\]" <<<"$out"

export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
# shellcheck disable=SC2046
g++ examples/custom_op/check_cube.cc $(pkg-config --cflags --libs rill) \
  -Wl,-rpath,"$prefix/lib" -o "$work/check_cube_pc"
"$work/check_cube_pc" "$plugin" >/dev/null
echo "pkg-config build: ok"

# A trainer embedding Rill: its loss goes down, it resumes from its checkpoint,
# it reads what its own op actor (grad_norm) publishes.
cmake -S examples/embedding -B "$work/embedding" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_CXX_FLAGS="-Wall -Wextra -Werror" >/dev/null
cmake --build "$work/embedding" -j "${RILL_JOBS:-2}" >/dev/null
first=$("$work/embedding/blob_trainer" --steps 60 --dir "$work/run")
echo "$first"
again=$("$work/embedding/blob_trainer" --steps 120 --dir "$work/run" --resume)
echo "$again"
# Its checkpoint (at step 120) is beyond a run of 100 steps: refused, naming it.
if refused=$("$work/embedding/blob_trainer" --steps 100 --dir "$work/run" --resume 2>&1); then
  echo "a checkpoint beyond --steps was accepted: $refused" >&2
  exit 1
fi
grep -q "checkpoint.bin: is at step 120, beyond --steps 100" <<<"$refused"
python3 - "$first" "$again" <<'PY'
import re, sys
first, again = sys.argv[1], sys.argv[2]
start, end = map(float, re.search(r"loss ([\d.]+) -> ([\d.]+)", first).groups())
assert end < 0.5 * start, f"the loss did not go down: {start} -> {end}"
assert "resumed from step 60" in again, again
norms = [float(n) for n in re.findall(r"gradient norm ([\d.]+)", first)]
assert len(norms) == 3 and all(n > 0 for n in norms), f"the op actor's norms did not arrive: {first}"
resumed_start = float(re.search(r"loss ([\d.]+) ->", again).group(1))
assert resumed_start < 0.5 * start, f"the resumed run starts from scratch: {resumed_start}"
PY
"$prefix/bin/rill" trace summarize "$work/run/last_step_trace.json" | tail -2

if [[ -f $prefix/share/rill/visualizer/index.html ]]; then
  page=$("$prefix/bin/rill" trace view "$work/cube_trace.json")
  grep -q '"traceEvents"' "$page"
  echo "installed visualizer: ok"
fi
echo "install check passed"
