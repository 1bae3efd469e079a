#!/usr/bin/env bash
# The installed package is a closed facade: installs the build to a temporary
# prefix, compiles a file that includes only <rill/rill.h> with -I<prefix>/include
# and no other include path, checks with the compiler's dependency output (-M)
# that no CAF or Boost header is reached, links and runs it, and checks that
# `pkg-config --cflags rill` names that one include root.
#
#   install_test.sh BUILD_DIR WORK CXX
set -euo pipefail
# RILL_USER_CXXFLAGS: extra flags for the user program (a sanitizer build sets them).
build=$1 work=$2 cxx=$3
rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null

cat >"$work/use_rill.cc" <<'CC'
#include <rill/rill.h>

#include <cstdio>

int main() {
  rill::Program main_program, startup;
  rill::Builder b(&main_program, &startup, /*seed=*/1);
  rill::Var x = b.Data("x", {-1, 3});
  rill::Var y = b.Scale(x, 2.0f);
  rill::Scope scope;
  rill::Tensor input(rill::DataType::kFloat32, {1, 3});
  input.Fill(1.5);
  rill::ParallelExecutor exe(main_program.desc(), &scope, {.places = {rill::Place::Cpu()}});
  const std::vector<rill::Tensor> out = exe.Run({{"x", input}}, {y.name});
  std::printf("%s %g\n", rill::Version(), out[0].GetAsDouble(2));
  return out[0].GetAsDouble(2) == 3.0 ? 0 : 1;
}
CC

# Every header the file reaches, from the installed tree and the system.
"$cxx" -std=c++20 -I"$prefix/include" -M "$work/use_rill.cc" >"$work/use_rill.d"
grep -q "$prefix/include/rill/rill.h" "$work/use_rill.d" ||
  { echo "rill.h was not taken from the installed tree" >&2; exit 1; }
if grep -E -o '[^ ]*/(caf|boost)/[^ ]*' "$work/use_rill.d" >"$work/reached"; then
  echo "<rill/rill.h> reaches CAF or Boost headers:" >&2
  head -20 "$work/reached" >&2
  exit 1
fi
echo "headers reached: $(tr ' \\' '\n\n' <"$work/use_rill.d" | grep -c '\.h') (no CAF, no Boost)"

"$cxx" -std=c++20 -Wall -Wextra -Werror ${RILL_USER_CXXFLAGS:-} -I"$prefix/include" "$work/use_rill.cc" \
  -L"$prefix/lib" -lrill -lprotobuf -pthread -Wl,-rpath,"$prefix/lib" -o "$work/use_rill"
"$work/use_rill"

export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
cflags=$(pkg-config --cflags rill)
read -r -a words <<<"$cflags"
includes=()
for word in "${words[@]}"; do [[ $word == -I* ]] && includes+=("${word#-I}"); done
if [[ ${#includes[@]} -ne 1 ]]; then
  echo "pkg-config --cflags rill gives ${#includes[@]} include roots: $cflags" >&2
  exit 1
fi
[[ $(realpath "${includes[0]}") == $(realpath "$prefix/include") ]] ||
  { echo "pkg-config's include root ${includes[0]} is not $prefix/include" >&2; exit 1; }
echo "pkg-config --cflags rill: $cflags"
echo "install test passed"
