#!/usr/bin/env bash
# Runs cmake/install_deps.sh with stub dpkg, apt-get, sudo, id and python3 (`-m pip`) alone on PATH
# beside a few real tools, over a fake CUDA toolkit: nothing is installed for real. Each case checks
# the exact commands the script issued and as whom (root, user, or the user through sudo), its exit
# code, and its last line on stderr (empty on success).
#   tests/setup/test_install_deps.sh [SCRIPT]     (default: cmake/install_deps.sh of this tree)
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
stubs="$repo/tests/setup/stubs"
script="$(realpath "${1:-$repo/cmake/install_deps.sh}")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
debs=(cmake ninja-build g++ libbenchmark-dev libboost-dev libgtest-dev python3-pip)
mapfile -t pins < <(grep -hE '^[A-Za-z0-9]' "$repo/cmake/requirements.txt" \
  "$repo/reports/requirements.txt")
pip_install="python3 -m pip install -q --disable-pip-version-check --no-deps"
pip_list="python3 -m pip list --format=freeze --disable-pip-version-check"
failed=0 cases=0

# new_case NAME: a fresh machine with CUDA 13.0 (cuDNN, NCCL) and none of the packages or pins.
new_case() {
  name="$1"
  dir="$work/case$((++cases))"
  bin="$dir/bin" root="$dir/root" state="$dir/state"
  mkdir -p "$bin" "$state" "$root/usr/local/cuda/lib64"
  local tool
  for tool in bash env dirname mktemp rm cat grep sed tr touch; do
    ln -s "$(command -v "$tool")" "$bin/$tool"
  done
  ln -s "$stubs"/* "$bin/"
  fake_nvcc "$root/usr/local/cuda" 13.0
  touch "$root/usr/local/cuda/lib64/libcudnn.so" "$root/usr/local/cuda/lib64/libnccl.so" \
    "$state/debs" "$state/pins" "$state/log"
}
fake_nvcc() {  # fake_nvcc TOOLKIT_DIR VERSION
  mkdir -p "$1/bin"
  printf '#!/usr/bin/env bash\necho "Cuda compilation tools, release %s, V%s.1"\n' "$2" "$2" \
    >"$1/bin/nvcc"
  chmod +x "$1/bin/nvcc"
}
installed() {  # installed debs|pins: everything the script would install is already there
  if [ "$1" = debs ]; then printf '%s\n' "${debs[@]}"; else printf '%s\n' "${pins[@]}"; fi \
    >"$state/$1"
}
dpkg_checks() {  # dpkg_checks AS [EXTRA PACKAGE...]: the expected status queries
  local p
  for p in "${debs[@]}" "${@:2}"; do echo "$1 dpkg -s $p"; done
}

# run AS [VAR=value...] [-- ARGS...] then the expected log on stdin: runs the script as AS (root or
# user) with only the stubs' variables set; compares its exit code with $rc (default 0), its last
# line on stderr with $error (default none), and its commands with the expected log.
run() {
  local as="$1" env=() args=() got want
  shift
  while [ $# -gt 0 ] && [ "$1" != -- ]; do env+=("$1"); shift; done
  [ $# -gt 0 ] && args=("${@:2}")
  want="$(cat)"
  set +e
  env -i PATH="$bin${extra_path:+:$extra_path}" HOME="$dir" XF_STUB_AS="$as" \
    XF_STUB_STATE="$state" XF_INSTALL_DEPS_TEST_ROOT="$root" "${env[@]}" "$script" "${args[@]}" \
    >"$dir/out" 2>"$dir/err"
  got=$?
  set -e
  local problems=()
  [ "$got" -eq "${rc:-0}" ] || problems+=("exit code $got, expected ${rc:-0}")
  [ "$(tail -n 1 "$dir/err")" = "${error:-}" ] ||
    problems+=("last stderr line differs, expected: ${error:-(none)}")
  [ "$(cat "$state/log")" = "$want" ] || problems+=("commands differ (- expected, + issued):
$(diff <(echo "$want") "$state/log" | sed -n 's/^</-/p; s/^>/+/p' || true)")
  if [ "${#problems[@]}" -eq 0 ]; then
    echo "ok:     $name"
  else
    failed=$((failed + 1))
    echo "FAILED: $name"
    printf '  %s\n' "${problems[@]}"
    sed 's/^/  stderr: /' "$dir/err"
  fi
  unset rc error extra_path
}

new_case "root, fresh Debian: every package and pin installed, pip retried past PEP 668"
run root XF_STUB_EXTERNALLY_MANAGED=1 <<EOF
$(dpkg_checks root)
root apt-get update -qq
root DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ${debs[*]}
root $pip_list
root $pip_install ${pins[*]}
root $pip_install --break-system-packages ${pins[*]}
EOF

new_case "root, everything installed (pip's own spelling of names): nothing run but queries"
installed debs
installed pins
sed -i 's/^Pygments==/pygments==/; s/^python-dateutil==/python_dateutil==/' "$state/pins"
run root <<EOF
$(dpkg_checks root)
root $pip_list
EOF

new_case "user with sudo, fresh machine: apt-get and pip through sudo"
run user <<EOF
$(dpkg_checks user)
sudo apt-get update -qq
sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ${debs[*]}
user $pip_list
user python3 -c <can this user write to site-packages?>
sudo $pip_install ${pins[*]}
EOF

new_case "user without sudo, everything installed: succeeds"
rm "$bin/sudo"
installed debs
installed pins
run user <<EOF
$(dpkg_checks user)
user $pip_list
EOF

new_case "user without sudo, libboost-dev missing: one line, exit 1"
rm "$bin/sudo"
installed debs
sed -i '/^libboost-dev$/d' "$state/debs"
rc=1 error="install_deps: cannot install libboost-dev: this user is not root and sudo is not installed (run it as root)" \
  run user <<EOF
$(dpkg_checks user)
EOF

new_case "user whom sudo refuses: one line naming sudo"
rc=1 error="install_deps: sudo apt-get update failed (above), so ${debs[*]} cannot be installed" \
  run user XF_STUB_FAIL=sudo <<EOF
$(dpkg_checks user)
user sudo apt-get update -qq (refused)
EOF

new_case "user who can write to python3's site-packages (a venv): pip without sudo, missing pin only"
installed debs
installed pins
sed -i '/^pytest==/d' "$state/pins"
run user XF_STUB_SITE=writable <<EOF
$(dpkg_checks user)
user $pip_list
user python3 -c <can this user write to site-packages?>
user $pip_install $(grep -h '^pytest==' "$repo/reports/requirements.txt")
EOF

new_case "root, libboost-dev removed with its config files left, extra package shellcheck"
installed debs
installed pins
sed -i 's/^libboost-dev$/libboost-dev:removed/' "$state/debs"
run root -- shellcheck <<EOF
$(dpkg_checks root shellcheck)
root apt-get update -qq
root DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libboost-dev shellcheck
root $pip_list
EOF

new_case "root, apt-get update fails: stops there"
rc=1 error="install_deps: apt-get update failed (above), so ${debs[*]} cannot be installed" \
  run root XF_STUB_FAIL="apt-get update" <<EOF
$(dpkg_checks root)
root apt-get update -qq
EOF

new_case "root, apt-get install fails: stops there"
rc=1 error="install_deps: apt-get could not install ${debs[*]} (its reason is above)" \
  run root XF_STUB_FAIL="apt-get install" <<EOF
$(dpkg_checks root)
root apt-get update -qq
root DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ${debs[*]}
EOF

new_case "root, pip install fails for another reason than PEP 668: no --break-system-packages retry"
installed debs
rc=1 error="install_deps: pip could not install ${pins[*]} (its reason is above)" \
  run root XF_STUB_FAIL="pip install" <<EOF
$(dpkg_checks root)
root $pip_list
root $pip_install ${pins[*]}
EOF

new_case "root, python3 without pip: one line"
installed debs
rc=1 error="install_deps: '$bin/python3 -m pip' does not run: install pip for that python3" \
  run root XF_STUB_FAIL="pip list" <<EOF
$(dpkg_checks root)
root $pip_list
EOF

new_case "no CUDA toolkit: stops before anything else"
rm "$root/usr/local/cuda/bin/nvcc"
rc=1 error="install_deps: the CUDA toolkit (nvcc) is neither in $root/usr/local/cuda/bin nor on PATH: install CUDA 12.4+ from NVIDIA" \
  run root </dev/null

new_case "CUDA 12.2: too old"
fake_nvcc "$root/usr/local/cuda" 12.2
rc=1 error="install_deps: $root/usr/local/cuda/bin/nvcc is CUDA 12.2; xfbench needs 12.4+ from NVIDIA" \
  run root </dev/null

new_case "cuDNN missing"
rm "$root/usr/local/cuda/lib64/libcudnn.so"
rc=1 error="install_deps: cuDNN 9 (libcudnn.so) is missing: apt-get install cudnn9-cuda-13 (NVIDIA's repository)" \
  run root </dev/null

new_case "CUDA 12.4 found through PATH, cuDNN and NCCL in Debian's multiarch folder"
rm -r "$root/usr/local/cuda"
fake_nvcc "$root/opt/cuda-12.4" 12.4
mkdir -p "$root/usr/lib/x86_64-linux-gnu"
touch "$root/usr/lib/x86_64-linux-gnu/libcudnn.so" "$root/usr/lib/x86_64-linux-gnu/libnccl.so"
installed debs
installed pins
extra_path="$root/opt/cuda-12.4/bin" run root <<EOF
$(dpkg_checks root)
root $pip_list
EOF

echo "$cases cases, $failed failed"
[ "$failed" -eq 0 ]
