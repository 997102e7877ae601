#!/usr/bin/env bash
# Installs every build, test and benchmark dependency from Debian 12's packages.
# Idempotent: does nothing (no apt-get update, no network) when all are present.
# Usage: sudo bash scripts/install-deps.sh     (root on a fresh Debian 12)
set -euo pipefail

packages=(
  build-essential cmake pkg-config git
  libcurl4-openssl-dev libgumbo-dev
  libboost1.81-dev libboost-url1.81-dev libboost-json1.81-dev
  libxxhash-dev libspdlog-dev catch2 libtomlplusplus-dev libcli11-dev
  zlib1g-dev libhiredis-dev redis-server
  clang libclang-rt-14-dev
  python3
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
