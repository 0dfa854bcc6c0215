#!/usr/bin/env bash
# Installs Assay's build and test dependencies from Debian 12's packages.
# Idempotent: does nothing when everything is already installed.
set -euo pipefail
PKGS=(
  build-essential cmake ninja-build ccache pkg-config git
  nlohmann-json3-dev libcpp-httplib-dev libcli11-dev libspdlog-dev libfmt-dev
  libsqlite3-dev libzstd-dev libxxhash-dev libssl-dev zlib1g-dev libbrotli-dev
  libgtest-dev libgmock-dev libbenchmark-dev clang libclang-rt-14-dev bubblewrap
  postgresql libpq-dev python3 python3-numpy python3-torch
  libtorch-dev pybind11-dev  # a real load_inline build in the harness tests (C++ only, CPU)
)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "assay: installing ${missing[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if [ ! -f "${ASSAY_CUDA_ROOT:-/usr/local/cuda}/include/cuda.h" ]; then
  echo "assay: the CUDA 13 toolkit is expected at ${ASSAY_CUDA_ROOT:-/usr/local/cuda} (headers, NVRTC, nvcc)." >&2
  echo "       It is not a Debian package; it ships with the project's machines." >&2
  exit 1
fi
