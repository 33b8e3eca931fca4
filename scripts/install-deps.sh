#!/usr/bin/env bash
# Installs the Debian packages tessera needs to build, test and benchmark.
# Idempotent: packages already present are skipped; apt-get runs only if one is missing.
set -euo pipefail

PACKAGES=(
  cmake ninja-build g++ make pkg-config clang-format
  libopenblas-dev libdnnl-dev
  coinor-libcbc-dev
  libopenmpi-dev openmpi-bin
  nlohmann-json3-dev libcli11-dev libfmt-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  python3-matplotlib libcpp-httplib-dev libpng-dev
  libucx-dev
  python3-dev python3-pybind11 python3-pytest python3-torch python3-venv python3-pip
  python3-setuptools python3-wheel curl
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
