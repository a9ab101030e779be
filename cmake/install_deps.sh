#!/usr/bin/env bash
# Installs what xfbench builds against, only what is missing: Debian packages (apt-get) and the
# PyPI pins of cmake/requirements.txt and reports/requirements.txt (`python3 -m pip`: the python3
# that CMake asks for its site-packages). Arguments name extra Debian packages (CI adds its tools).
# The CUDA toolkit cannot be installed from here, so it is checked first.
# Runs as root or as a user with sudo; whatever it cannot do stops it with one line and exit 1.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
fail() { echo "install_deps: $*" >&2; exit 1; }
root="${XF_INSTALL_DEPS_TEST_ROOT:-}"  # the tests put a fake filesystem here; empty otherwise

# CUDA toolkit where CMake finds it: /usr/local/cuda first, else nvcc on PATH.
cuda="$root/usr/local/cuda"
nvcc="$cuda/bin/nvcc"
if [ ! -x "$nvcc" ]; then
  nvcc="$(command -v nvcc)" ||
    fail "the CUDA toolkit (nvcc) is neither in $cuda/bin nor on PATH:" \
      "install CUDA 12.4+ from NVIDIA"
  cuda="$(dirname "$(dirname "$nvcc")")"
fi
version="$("$nvcc" --version 2>/dev/null | sed -n 's/.*release \([0-9]*\.[0-9]*\).*/\1/p')" ||
  true
major="${version%%.*}" minor="${version#*.}"
if [ -z "$version" ] || [ "$major" -lt 12 ] || { [ "$major" -eq 12 ] && [ "$minor" -lt 4 ]; }; then
  fail "$nvcc is CUDA ${version:-(no version in nvcc --version)}; xfbench needs 12.4+ from NVIDIA"
fi
have_lib() {  # have_lib NAME: lib<NAME>.so is where CMake's find_library looks
  local dir
  for dir in "$cuda/lib64" "$cuda/lib" "$root"/usr/lib/*-linux-gnu "$root/usr/lib" \
    "$root/usr/local/lib"; do
    [ -e "$dir/lib$1.so" ] && return 0
  done
  return 1
}
have_lib cudnn ||
  fail "cuDNN 9 (libcudnn.so) is missing: apt-get install cudnn9-cuda-$major (NVIDIA's repository)"
have_lib nccl ||
  fail "NCCL 2 (libnccl.so) is missing: apt-get install libnccl-dev (NVIDIA's repository)"

# Root, or sudo when something has to be installed.
uid="$(id -u)"
as_root=()
[ "$uid" -ne 0 ] && command -v sudo >/dev/null && as_root=(sudo)
need_root() {  # need_root WHAT: stop, naming WHAT, if nothing can run as root
  [ "$uid" -eq 0 ] || [ "${#as_root[@]}" -gt 0 ] ||
    fail "cannot install $1: this user is not root and sudo is not installed (run it as root)"
}

# Debian packages.
{ command -v dpkg && command -v apt-get; } >/dev/null ||
  fail "dpkg and apt-get not found: this script installs Debian/Ubuntu packages only"
installed() { [[ "$(dpkg -s "$1" 2>/dev/null)" == *"Status: install ok installed"* ]]; }
missing=()
for p in cmake ninja-build g++ libbenchmark-dev libboost-dev libgtest-dev python3-pip "$@"; do
  installed "$p" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  need_root "${missing[*]}"
  echo "install_deps: installing ${missing[*]} (apt-get)"
  sudo="${as_root[*]:+sudo }"  # named in the error when it is sudo that refused
  "${as_root[@]}" apt-get update -qq ||
    fail "${sudo}apt-get update failed (above), so ${missing[*]} cannot be installed"
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq "${missing[@]}" >/dev/null ||
    fail "${sudo}apt-get could not install ${missing[*]} (its reason is above)"
fi

# PyPI pins missing from python3's packages (names compared as PEP 503 normalises them).
python3="$(command -v python3)" || fail "python3 is not on PATH although python3-pip is installed"
pep503() { tr '[:upper:]_.' '[:lower:]--'; }
have="$("$python3" -m pip list --format=freeze --disable-pip-version-check 2>/dev/null | pep503)" ||
  fail "'$python3 -m pip' does not run: install pip for that python3"
missing=()
for req in "$here/requirements.txt" "$here/../reports/requirements.txt"; do
  while read -r pin || [ -n "$pin" ]; do
    pin="${pin%%#*}"; pin="${pin//[[:space:]]/}"
    [ -z "$pin" ] && continue
    [[ "$pin" == ?*==?* ]] || fail "$req: '$pin' is not pinned as name==version"
    grep -qxF "$(pep503 <<<"$pin")" <<<"$have" || missing+=("$pin")
  done <"$req"
done
[ "${#missing[@]}" -eq 0 ] && exit 0

# Into python3's own site-packages, through sudo only when this user cannot write there.
pip_as=()
if [ "$uid" -ne 0 ] && ! "$python3" -c 'import os, sys, sysconfig
p = sysconfig.get_paths()["purelib"]
while not os.path.isdir(p): p = os.path.dirname(p)
sys.exit(not os.access(p, os.W_OK))'; then
  need_root "${missing[*]}"
  pip_as=("${as_root[@]}")
fi
echo "install_deps: installing ${missing[*]} (pip)"
errors="$(mktemp)"
trap 'rm -f "$errors"' EXIT
# --no-deps: every pin's dependencies are pinned beside it (the header wheels need none: the build
# reads nvidia-cutlass's C++ headers, never its Python tools).
pip_install() {
  "${pip_as[@]}" "$python3" -m pip install -q --disable-pip-version-check --no-deps "$@" "${missing[@]}" \
    2>"$errors"
}
# Debian's python3 refuses pip (PEP 668); the pins go to /usr/local, beside Debian's own packages.
pip_install ||
  { grep -q externally-managed-environment "$errors" && pip_install --break-system-packages; } || {
  cat "$errors" >&2
  fail "${pip_as[*]:+sudo }pip could not install ${missing[*]} (its reason is above)"
}
