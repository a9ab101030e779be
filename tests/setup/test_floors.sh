#!/usr/bin/env bash
# The floors check on a small tree that breaks each rule (it must fail, naming each include), then
# on the repository (it must pass).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/kernels/models" "$tmp/kernels/comm" "$tmp/plugins/a" "$tmp/plugins/b" "$tmp/harness/src"
printf '#include "kernels/models/block.hpp"\n' >"$tmp/kernels/gemm.cu"
printf '#include "kernels/models/block.hpp"\n#include "kernels/gemm.hpp"\n' >"$tmp/kernels/comm/nccl.cpp"
printf '#include "kernels/gemm.hpp"\n' >"$tmp/harness/src/sdk.cpp"
printf '#include "plugins/b/b.hpp"\n#include "kernels/models/block.hpp"\n' >"$tmp/plugins/a/a.cpp"
if out=$("$here/check_floors.py" "$tmp"); then
  echo "FAIL: a tree with upward includes passed"; exit 1
fi
for want in "kernels/gemm.cu: includes kernels/models/block.hpp" \
  "kernels/comm/nccl.cpp: includes kernels/models/block.hpp" \
  "harness/src/sdk.cpp: includes kernels/gemm.hpp" "plugins/a/a.cpp: includes another plugin's plugins/b/b.hpp"; do
  grep -qF "$want" <<<"$out" || { echo "FAIL: not reported: $want"; echo "$out"; exit 1; }
done
[ "$(wc -l <<<"$out")" -eq 4 ] || { echo "FAIL: expected 4 lines:"; echo "$out"; exit 1; }
"$here/check_floors.py" "$here/../.."
# The README draws the include graph between the floors: its copy is the tree's.
readme="$here/../../README.md"
while IFS= read -r line; do
  grep -qxF "$line" "$readme" || { echo "FAIL: README's floor graph lacks: $line"; exit 1; }
done < <("$here/check_floors.py" --graph "$here/../..")
