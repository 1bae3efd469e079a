#!/usr/bin/env bash
# Runs the visualizer's browser test in headless Chromium:
#   run_browser_test.sh PAGE.html TRACE.json SCREENSHOT.png
# PAGE.html is the built page with TRACE.json embedded (`rill trace view`,
# test/embed.mjs) or the page as built (the test then opens the trace with its
# file picker). Installs node_modules when missing or stale.
set -euo pipefail
if [[ $# -ne 3 ]]; then
  echo "usage: $0 PAGE.html TRACE.json SCREENSHOT.png" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
if [[ ! -x ${RILL_CHROMIUM:-/usr/bin/chromium} ]]; then
  echo "run_browser_test.sh: no ${RILL_CHROMIUM:-/usr/bin/chromium}; run tools/visualizer/setup.sh as root" >&2
  exit 1
fi
bash "$here/deps.sh"
exec node "$here/test/browser_test.mjs" "$@"
