#!/usr/bin/env bash
# The README's first C++ snippet ("Writing a program") compiles as written
# and runs: its #include and `using` lines open the file, the statements
# after them go in main() (as the README tells the reader), and it is built
# against the build tree's public include roots and librill only (no CAF,
# Boost or internal path), with warnings as errors.
#
#   readme_snippet_test.sh README.md WORK CXX LIBRILL INCLUDE_DIR...
set -euo pipefail
# RILL_USER_CXXFLAGS: extra flags for the user program (a sanitizer build sets them).
readme=$1 work=$2 cxx=$3 library=$4
shift 4
mkdir -p "$work"

# The first ```cpp block.
awk '/^```cpp$/ { inside = 1; next } inside && /^```$/ { exit } inside { print }' "$readme" \
  >"$work/snippet.cc.txt"
[[ -s $work/snippet.cc.txt ]] || { echo "no \`\`\`cpp block in $readme" >&2; exit 1; }
grep -q '^#include <rill/rill.h>$' "$work/snippet.cc.txt" ||
  { echo "the first snippet does not include <rill/rill.h>" >&2; exit 1; }

# The leading #include, using and blank lines stay at file scope; the rest is main's body.
awk 'BEGIN { body = 0 }
     !body && (/^#include / || /^using namespace / || /^$/) { print; next }
     !body { body = 1; print "int main() {" }
     { print ($0 == "" ? "" : "  " $0) }
     END { print "  return 0;"; print "}" }' "$work/snippet.cc.txt" >"$work/snippet.cc"

includes=()
for dir in "$@"; do includes+=("-I$dir"); done
"$cxx" -std=c++20 -Wall -Wextra -Werror ${RILL_USER_CXXFLAGS:-} "${includes[@]}" "$work/snippet.cc" "$library" \
  -lprotobuf -pthread -Wl,-rpath,"$(dirname "$library")" -o "$work/snippet"
out=$("$work/snippet")
echo "$out"
# One step on the untrained MLP: a finite loss near ln(10) = 2.3.
python3 - "$out" <<'PY'
import math, re, sys
m = re.fullmatch(r"loss ([-+\d.e]+)", sys.argv[1].strip())
assert m, f"unexpected output: {sys.argv[1]!r}"
loss = float(m.group(1))
assert math.isfinite(loss) and 1.0 < loss < 5.0, f"loss {loss} is not near ln(10)"
PY
echo "the README's first snippet compiles and runs"
