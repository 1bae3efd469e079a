#!/usr/bin/env bash
# Installs, from Debian's packages, what the visualizer's build and browser test
# need: chromium, and nodejs and npm when node or npm is missing. Run as root.
# Idempotent, and quick when all is there (apt-get update only when needed).
set -euo pipefail
need=()
[[ -x /usr/bin/chromium ]] || need+=(chromium)
command -v node >/dev/null || need+=(nodejs)
command -v npm >/dev/null || need+=(npm)
if ((${#need[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "setup.sh: missing ${need[*]}; run it as root" >&2
    exit 1
  fi
  echo "setup.sh: installing ${need[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if ((major < 18)); then
  echo "setup.sh: node $(node --version) is too old (the build and test need 18 or later)" >&2
  exit 1
fi
