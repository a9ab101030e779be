#!/usr/bin/env bash
# xfbench's Burn beside gpu-burn on one GPU, in one device call (issue #22). gpu-burn is built
# there from burn-peer/ in the tree root: its source as `fetch github:wilicc/gpu-burn` gives it,
# ignored through .git/info/exclude and never committed. Each gpu-burn mode and each xfbench dtype
# burns the same time; the two alternate, so neither always inherits the other's heat.
#   reports/results/h100/burn/side_by_side.sh build/burn-dev [seconds [group...]]   (under $OUT)
# A group is xfbench dtypes, e.g. fp32 or 'bf16|fp8'; tf32, fp32 and fp64 follow gpu-burn's -tc,
# default and -d modes. Default groups: tf32 fp32 fp64 'bf16|fp16|fp8'. A group ending in
# @gpu-burn (fp64@gpu-burn) burns gpu-burn's inputs, [0, 10), instead of [-1, 1)
# (--xfbench_burn_inputs), into xfbench_<dtypes>_gpu-burn.json.
set -uo pipefail
build="$1"
seconds="${2:-30}"
groups=("${@:3}")
[ "${#groups[@]}" -gt 0 ] || groups=(tf32 fp32 fp64 'bf16|fp16|fp8')
out="${OUT:-/tmp/burn_side_by_side}"
mkdir -p "$out"
torch_libs=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH="$torch_libs/cudnn/lib:$torch_libs/nccl/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm,clocks.max.mem \
  --format=csv >"$out/gpu.txt"
(cd burn-peer && make COMPUTE=90 >"$out/gpu_burn_build.log" 2>&1) || {
  echo "gpu-burn did not build (see gpu_burn_build.log)"
  exit 1
}

peer() {  # peer ARGS...: one gpu-burn run, its output appended to gpu_burn.log
  {
    echo "== gpu_burn $*"
    (cd burn-peer && ./gpu_burn "$@")
    echo "== exit $?"
  } >>"$out/gpu_burn.log" 2>&1
}

xf() {  # xf 'fp64|bf16' NAME INPUTS: xfbench's Burn cases of those dtypes into xfbench_NAME.json
  {
    echo "== xfbench Burn $1, inputs $3"
    "$build/bin/xfbench" --benchmark_filter="^Burn/($1)/" --xfbench_burn_dtypes="${1//|/,}" \
      --xfbench_burn_seconds="$seconds" --xfbench_burn_inputs="$3" \
      --benchmark_out="$out/xfbench_$2.json" --benchmark_out_format=json
    echo "== exit $?"
  } >>"$out/xfbench.log" 2>&1
}

for g in "${groups[@]}"; do
  dtypes="${g%@*}" inputs=signed
  [ "$dtypes" = "$g" ] || inputs="${g#*@}"
  case "$dtypes" in
    tf32) peer -tc "$seconds" ;;
    fp32) peer "$seconds" ;;
    fp64) peer -d "$seconds" ;;
  esac
  name="${dtypes//|/_}"
  [ "$inputs" = signed ] || name="${name}_$inputs"
  xf "$dtypes" "$name" "$inputs"
done
grep -E "Gflop/s|GPU 0:" "$out/gpu_burn.log" | tail -6
grep -E "^Burn/.* gpu0 " "$out/xfbench.log"
