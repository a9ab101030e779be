#!/usr/bin/env bash
# Session 26 (issue 34): where one gpt2-xl block's fwd+bwd spends its time, kernel by kernel, bf16
# against fp8 (recipe:delayed), at the training step's shape (seq 1024, batch 8; the step runs 48
# of them). ncu times each kernel of the first 400 timed launches (--profile-from-start off: the
# SDK opens the capture around the timed launches only; --clock-control none: the GPU's clocks as
# they are), hot mode, not validated. ncu serialises kernels: overlap between streams is lost.
# Carry: build/device/bin/xfbench build/device/lib
# Run: bash reports/results/h100/gpt2_block/s26_kernels/run.sh
set -uo pipefail
t0=$SECONDS
el() { echo $((SECONDS - t0)); }
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:${LD_LIBRARY_PATH:-}
R=$OUT/kernels
mkdir -p "$R"
trap 'tar -czf "$OUT/kernels.tgz" -C "$OUT" kernels' EXIT # a call brings back 8 files at most
NCU=$(command -v ncu)
for f in /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu; do
  [ -n "$NCU" ] || { [ -x "$f" ] && NCU=$f; }
done
echo "ncu: $NCU $("$NCU" --version | tail -1)" >"$R/ncu.txt"
for d in bf16 fp8; do
  timeout 120 "$NCU" --profile-from-start off --clock-control none --cache-control none \
    --metrics gpu__time_duration.sum --launch-count 400 --csv --page raw --log-file "$R/$d.csv" \
    build/device/bin/xfbench --xfbench_mode=hot --xfbench_validate=false \
    --xfbench_gpt2_model=gpt2-xl --xfbench_gpt2_seqs=1024 --xfbench_gpt2_batches=8 \
    --xfbench_gpt2_dtypes="$d" --xfbench_gpt2_fp8_recipe=delayed --xfbench_gpt2_backends=fused \
    --benchmark_filter='^GPT2Block/fused/.*/fwdbwd/' >"$R/$d.txt" 2>&1
  echo "$d rc=$? t=$(el) s" >>"$R/ncu.txt"
done
