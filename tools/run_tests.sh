#!/usr/bin/env bash
# The test suite: installs dependencies, builds with warnings as errors, runs every CTest test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
bash tools/build.sh -DRILL_WERROR=ON
ctest --test-dir "${RILL_BUILD_DIR:-build}" -j "$(nproc)" --output-on-failure --timeout 600
