#!/usr/bin/env bash
# Installs the Debian packages tessera needs.
#   install-deps.sh          everything: build, test and benchmark (make build, make test)
#   install-deps.sh --demo   only what the build of `make demo` needs (the library's headers
#                            and libraries and the compiler), not the test and Python packages
# Idempotent: packages already present are skipped; apt-get runs only if one is missing.
set -euo pipefail

BUILD_PACKAGES=(
  cmake ninja-build g++ make pkg-config
  libopenblas-dev libdnnl-dev
  coinor-libcbc-dev
  libopenmpi-dev openmpi-bin
  nlohmann-json3-dev libcli11-dev libfmt-dev
  libgtest-dev libgmock-dev
  libcpp-httplib-dev libboost-dev libbrotli-dev libpng-dev
  libucx-dev
)
REST_PACKAGES=(
  clang-format libbenchmark-dev python3-matplotlib libopencv-dev libgloo-dev dataset-fashion-mnist
  python3-dev python3-pybind11 python3-pytest python3-torch python3-venv python3-pip curl
)
case "${1:-}" in
  --demo) PACKAGES=("${BUILD_PACKAGES[@]}") ;;
  "") PACKAGES=("${BUILD_PACKAGES[@]}" "${REST_PACKAGES[@]}") ;;
  *) echo "install-deps: unknown option '$1' (use --demo or nothing)" >&2; exit 1 ;;
esac

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
