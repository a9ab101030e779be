#!/usr/bin/env bash
# Installs what xfbench builds against (Debian packages and pinned PyPI wheels), only what is missing.
# The CUDA toolkit (nvcc, cuBLAS, cuDNN, NCCL) is expected under /usr/local/cuda already.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"

debs=(cmake ninja-build g++ libbenchmark-dev libboost-dev libgtest-dev python3-pip)
missing=()
for p in "${debs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "install_deps: installing ${missing[*]}"
  $SUDO apt-get update -qq
  $SUDO DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# Build headers (NVML, cuDNN frontend) and the reports' tools, all pinned.
for req in "$here/requirements.txt" "$here/../reports/requirements.txt"; do
  if ! python3 -m pip install -q --disable-pip-version-check -r "$req" 2>/dev/null; then
    python3 -m pip install -q --disable-pip-version-check --break-system-packages -r "$req"
  fi
done
if [ ! -x /usr/local/cuda/bin/nvcc ] && ! command -v nvcc >/dev/null; then
  echo "install_deps: the CUDA toolkit (nvcc) is missing: install CUDA 12.4+ from NVIDIA and retry" >&2
  exit 1
fi
