#!/usr/bin/env bash
# The visualizer on a real trace, in headless Chromium: trains the MLP for a
# few steps with --trace, embeds the trace in the built page (rill trace view)
# and runs tools/visualizer's browser test on it, which checks the lanes,
# arrows, details and graph drawn against the trace and saves a screenshot.
# Usage: visualizer_browser_test.sh RILL PAGE_TEMPLATE OUTDIR
# Exits 77 (skipped) without Chromium, the built page or the dataset.
set -euo pipefail
rill=$1 template=$2 out=$3
here=$(cd "$(dirname "$0")/../.." && pwd)
skip() {
  echo "skipped: $1"
  exit 77
}
[[ -x ${RILL_CHROMIUM:-/usr/bin/chromium} ]] || skip "no Chromium (tools/visualizer/setup.sh installs it)"
[[ -f $template ]] || skip "the visualizer page is not built ($template; needs npm)"
[[ -d /usr/share/datasets/fashion-mnist ]] || skip "Fashion-MNIST is not installed"
mkdir -p "$out"
"$rill" train --epochs 1 --max-steps 12 --trace-skip 5 --trace-steps 5 --trace "$out/mlp_trace.json"
page=$("$rill" trace view "$out/mlp_trace.json" --template "$template")
bash "$here/tools/visualizer/run_browser_test.sh" "$page" "$out/mlp_trace.json" "$out/visualizer.png"
