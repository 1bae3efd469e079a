#!/usr/bin/env bash
# Installs tools/visualizer/node_modules from package-lock.json, only when it is
# missing or stale (a stamp holds the hash of the lock file it came from).
set -euo pipefail
cd "$(dirname "$0")"
want=$(sha256sum package-lock.json | cut -d' ' -f1)
stamp=node_modules/.rill-lock-sha256
if [[ -f $stamp && $(cat "$stamp") == "$want" ]]; then
  exit 0
fi
if ! command -v npm >/dev/null; then
  echo "npm is missing: run tools/visualizer/setup.sh (as root)" >&2
  exit 1
fi
echo "visualizer: npm ci" >&2
npm ci --no-audit --no-fund --loglevel=error >&2
echo "$want" >"$stamp"
