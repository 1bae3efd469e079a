#!/usr/bin/env bash
# Installs every build, test and data dependency of Rill from Debian's packages.
# Idempotent: packages already present are skipped by apt. Needs root (or sudo).
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config
  libcaf-dev
  libboost-fiber-dev libboost-context-dev
  libprotobuf-dev protobuf-compiler
  libopenblas-dev
  libgtest-dev libgmock-dev
  libtbb-dev
  nlohmann-json3-dev libcli11-dev
  clang libclang-rt-14-dev
  python3 python3-numpy python3-dev pybind11-dev python3-pytest  # the Python front end (python/)
  zlib1g-dev
  libssl-dev  # libcrypto: HMAC-SHA256 in the transport's handshake
  libgloo-dev  # collectives across processes on CPUs (rill train --collective)
  iproute2  # ip netns, for tests/tools/netns_test.sh
  dataset-fashion-mnist
)
# The trace visualizer: bundled with npm, tested in headless Chromium.
packages+=(chromium)
command -v node >/dev/null || packages+=(nodejs)
command -v npm >/dev/null || packages+=(npm)
if [[ "${RILL_SETUP_TORCH:-0}" == 1 ]]; then
  packages+=(python3-torch)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "setup: all dependencies present"
  exit 0
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO=sudo; fi
echo "setup: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
