#!/usr/bin/env bash
# The main job: installs dependencies, builds, and trains the Fashion-MNIST MLP
# (784-256-128-10, Adam, lr 1e-3, batch 64, 5 epochs) on the actor executor,
# writing a trace of 20 of its steps (build/trace.json, and build/trace.html
# with the visualizer when npm is installed). Extra arguments go to
# `rill train` and replace these defaults (e.g. --epochs 1).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
bash tools/build.sh
args=("$@")
build_dir=${RILL_BUILD_DIR:-build}
defaults=(--model mlp --epochs 5 --batch 64 --lr 1e-3 --optimizer adam --executor actor
  --trace "$build_dir/trace.json")
for ((i = 0; i < ${#defaults[@]}; i += 2)); do
  flag=${defaults[i]}
  given=0
  for a in "$@"; do
    if [[ "$a" == "$flag" || "$a" == "$flag="* ]]; then given=1; fi
  done
  if ((given == 0)); then args+=("$flag" "${defaults[i + 1]}"); fi
done
rill="$build_dir/tools/rill/rill"
"$rill" train "${args[@]}"
trace=""
for ((i = 0; i < ${#args[@]}; ++i)); do
  if [[ "${args[i]}" == --trace ]]; then trace=${args[i + 1]}; fi
  if [[ "${args[i]}" == --trace=* ]]; then trace=${args[i]#--trace=}; fi
done
if [[ -n "$trace" && -f "$build_dir/tools/visualizer/index.html" ]]; then
  echo "visualizer: $("$rill" trace view "$trace")"
fi
if [[ -n "$trace" ]]; then
  echo "summary: $rill trace summarize $trace; Perfetto: open https://ui.perfetto.dev and load $trace"
fi
