#!/usr/bin/env bash
# The transfer plugin's device runs, one call each (the commands behind
# reports/results/h100/transfer*.json and reports/results/h200x2/*.json):
#   tests/transfer/device_run.sh h100     # one H100: tests, Memcpy vs torch, 1-rank NCCL, memcheck
#   tests/transfer/device_run.sh h200x2   # two H200 with NVLink: tests, P2P, NCCL vs torch
# Console output goes to $OUT/console.log, test output to $OUT/tests.log, results to $OUT/*.json
# (at most 8 files come back from a device call).
set -uo pipefail
B=${B:-build/transfer}
out=${OUT:-/tmp/transfer_out}
mkdir -p "$out"
log="$out/console.log"
nv=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH="$nv/nccl/lib:${LD_LIBRARY_PATH:-}"
say() { echo "$@" | tee -a "$log"; }
xf() {  # xf <json name> <xfbench args...>
  local name=$1
  shift
  echo "== xfbench $*" >>"$log"
  timeout 200 "$B/bin/xfbench" --benchmark_out="$out/$name.json" --benchmark_out_format=json "$@" \
    >>"$log" 2>&1
  say "== $name rc=$? ($(grep -c '"error_occurred": true' "$out/$name.json" 2>/dev/null) errors)"
}
tests() {
  timeout 100 "$B/bin/test_transfer" --gtest_brief=1 >"$out/tests.log" 2>&1
  say "== tests rc=$?"
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |Failure|Expected|Which is" "$out/tests.log" | head -20
}
{
  nvidia-smi topo -m
  nvidia-smi --query-gpu=name,pcie.link.gen.max,pcie.link.width.max,clocks.sm,power.draw \
    --format=csv
  env | grep ^NCCL_
} >>"$log" 2>&1
case "${1:-}" in
  h100)
    tests
    xf transfer_memcpy --benchmark_filter='^(Memcpy/|P2P/topology)'
    xf transfer_memcpy_256MiB --benchmark_filter='^Memcpy/.*/bytes:268435456/' \
      --benchmark_repetitions=5
    timeout 120 python3 reports/peer_torch.py --families Memcpy --out "$out/torch_memcpy.json" 2>&1 |
      tee -a "$log"
    xf transfer_nccl_1rank --benchmark_filter='^NCCL/'
    timeout 60 compute-sanitizer --tool memcheck --report-api-errors no "$B/bin/xfbench" \
      --xfbench_iterations=1 --benchmark_filter='^Memcpy/.*/bytes:(4096|1048576)/' >>"$log" 2>&1
    say "== memcheck rc=$?"
    grep "ERROR SUMMARY" "$log" | tail -1
    ;;
  h200x2)
    tests
    one='^P2P/(uni|bi)/peer/(ce|sm)/src:0/dst:1/bytes:1073741824/'
    mkdir -p "$out/sweep"
    for v in "default" "pull --xfbench_p2p_copy_by=dst" "ce2 --xfbench_p2p_ce_streams=2" \
      "ce4 --xfbench_p2p_ce_streams=4" "sm1 --xfbench_p2p_blocks_per_sm=1" \
      "sm4 --xfbench_p2p_blocks_per_sm=4"; do
      read -ra words <<<"$v"  # the name, then its flags
      name="${words[0]}"
      timeout 60 "$B/bin/xfbench" --benchmark_filter="$one" "${words[@]:1}" --benchmark_out_format=json \
        --benchmark_out="$out/sweep/$name.json" >>"$log" 2>&1
      say "== sweep $name rc=$?"
    done
    python3 - "$out" <<'PY' | tee -a "$log"
import glob, json, os, sys
out = sys.argv[1]
runs = {}
for f in sorted(glob.glob(f"{out}/sweep/*.json")):
    try:
        runs[os.path.basename(f)[:-5]] = json.load(open(f))
    except ValueError as e:
        runs[os.path.basename(f)[:-5]] = {"error": str(e)}
    for b in runs[os.path.basename(f)[:-5]].get("benchmarks", []):
        print(f"{os.path.basename(f)[:-5]:8s} {b['name'][:52]:52s} {b.get('GB/s', 0):8.1f} GB/s"
              f" {b.get('error_message', '')[:60]}")
json.dump(runs, open(f"{out}/p2p_sweep.json", "w"), indent=1)
PY
    rm -rf "$out/sweep"
    xf transfer_allreduce --benchmark_repetitions=5 \
      --benchmark_filter='^NCCL/allreduce/fp32/gpus:2/bytes:(1048576|67108864|1073741824|4294967296)/'
    PYTHONUNBUFFERED=1 timeout 150 python3 plugins/transfer/torch_allreduce.py --p2p \
      --out "$out/torch_nccl.json" --sizes 1MiB,64MiB,1GiB,4GiB 2>&1 | tee -a "$log" | tail -8
    xf transfer_p2p --benchmark_filter='^P2P/'
    xf transfer_nccl --benchmark_filter='^NCCL/([a-z]+/fp32/|allreduce/|[a-z]+/(fp16|bf16)/gpus:2/bytes:(1048576|1073741824)/)'
    ;;
  *)
    echo "usage: $0 h100|h200x2" >&2
    exit 2
    ;;
esac
