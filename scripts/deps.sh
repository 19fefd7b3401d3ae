#!/usr/bin/env bash
# Installs the Debian packages flextp needs, only those missing. Safe to run again: does nothing
# when everything is present. Without root it prints what to install instead.
#   scripts/deps.sh         what make train and make test need
#   scripts/deps.sh clang   also clang with libFuzzer and LLVM's OpenMP (make fuzz, SANITIZE=...)
set -euo pipefail

packages=(
  cmake g++ make
  libeigen3-dev doctest-dev
  libopenmpi-dev openmpi-bin
  nlohmann-json3-dev libcli11-dev
  fortunes fortunes-min   # the default training corpus (English text)
  iproute2                # ip and tc: scripts/hosts, the tests across hosts
)
if [ "${1:-}" = "clang" ]; then
  packages+=(clang libclang-rt-14-dev libomp-dev)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "flextp deps: missing Debian packages: ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "flextp deps: not root; install them with:" >&2
  echo "  sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "flextp deps: installed ${missing[*]}"
