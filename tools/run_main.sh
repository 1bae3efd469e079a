#!/usr/bin/env bash
# The main job: installs dependencies, builds, and trains the Fashion-MNIST MLP
# (784-256-128-10, Adam, lr 1e-3, batch 64, 5 epochs) on the actor executor.
# Extra arguments go to `rill train` and replace these defaults (e.g. --epochs 1).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
bash tools/build.sh
args=("$@")
defaults=(--model mlp --epochs 5 --batch 64 --lr 1e-3 --optimizer adam --executor actor)
for ((i = 0; i < ${#defaults[@]}; i += 2)); do
  flag=${defaults[i]}
  given=0
  for a in "$@"; do
    if [[ "$a" == "$flag" || "$a" == "$flag="* ]]; then given=1; fi
  done
  if ((given == 0)); then args+=("$flag" "${defaults[i + 1]}"); fi
done
exec "${RILL_BUILD_DIR:-build}/tools/rill/rill" train "${args[@]}"
