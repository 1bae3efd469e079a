#!/usr/bin/env bash
# Builds the visualizer into OUTDIR/index.html: one self-contained page.
# Runs `npm ci` only when node_modules is missing or older than package-lock.json,
# so it works offline after the first install.
set -euo pipefail
if [[ $# -ne 1 ]]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
out=$(mkdir -p "$1" && cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
bash "$here/deps.sh"
node "$here/build.mjs" "$out"
