#!/usr/bin/env bash
# The main job: installs dependencies, builds, and trains the Fashion-MNIST MLP
# (784-256-128-10, Adam, lr 1e-3, batch 64, 5 epochs) on the actor executor.
# Extra arguments go to `rill train`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
bash tools/build.sh
exec "${RILL_BUILD_DIR:-build}/tools/rill/rill" train --model mlp --epochs 5 --batch 64 --lr 1e-3 \
  --optimizer adam --executor actor "$@"
