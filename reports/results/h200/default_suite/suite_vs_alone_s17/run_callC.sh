#!/usr/bin/env bash
# shellcheck disable=SC2129
# Session 17, call C (issue 32, 34): GPU tests of the cast refactor and GPT-2's FP8 training step;
# the default suite end to end with the steady GEMM final, then its Matmul cases and the Vector
# cases call A had no time for, each alone in its own process.
set -uo pipefail
B=build/device/bin
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:${LD_LIBRARY_PATH:-}
R=$OUT/r; mkdir -p "$R/alone"
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >"$R/gpu.txt"
L="$R/tests.log"
run() { echo "=== ${*:2} ($(($(date +%s) - t0)) s)" >>"$L"; timeout "$1" "${@:2}" >>"$L" 2>&1; echo "rc=$?" >>"$L"; }
run 40 $B/test_kernels --gtest_filter='*Fp8*'
run 60 $B/test_train_step --gtest_filter='TrainStepGpu.Fp8Gpt2*'
start=$(date +%s.%N)
timeout 260 $B/xfbench --benchmark_out="$R"/suite.json --benchmark_out_format=json 2>&1 |
  while IFS= read -r l; do printf '%s %s\n' "$(date +%s.%N)" "$l"; done >"$R"/suite.log
end=$(date +%s.%N)
echo "default suite wall: $(python3 -c "print(round($end - $start, 1))") s" | tee "$R"/wall.txt
i=0
for name in 'Matmul/fp32/NN/m:8192/n:8192/k:8192' 'Matmul/tf32/NN/m:8192/n:8192/k:8192' \
  'Matmul/fp16/NN/m:8192/n:8192/k:8192' 'Matmul/bf16/NN/m:8192/n:8192/k:8192' \
  'Matmul/bf16/NN/m:16384/n:16384/k:16384' 'Matmul/fp8/NT/m:8192/n:8192/k:8192' \
  'Vector/scale/fp32/n:1073741824' 'Vector/copy/fp32/n:268435456' 'Vector/triad/fp32/n:268435456' \
  'Vector/read/fp32/n:268435456' 'Vector/write/fp32/n:268435456'; do
  i=$((i + 1))
  if [ $(($(date +%s) - t0)) -gt 545 ]; then echo "stopped before $name: time" >>"$R/alone.log"; break; fi
  timeout 40 $B/xfbench --benchmark_filter="^${name}/" --benchmark_out="$R/alone/$i.json" \
    --benchmark_out_format=json >>"$R/alone.log" 2>&1
done
X=(--benchmark_repetitions=3 --benchmark_out_format=json)
left() { echo $((560 - ($(date +%s) - t0))); }
G=(--xfbench_gpt2_hidden=4096 --xfbench_gpt2_heads=32 --xfbench_gpt2_seqs=2048 --xfbench_gpt2_batches=8 --xfbench_gpt2_backends=fused)
if [ "$(left)" -gt 60 ]; then
  timeout "$(left)" $B/xfbench "${X[@]}" "${G[@]}" --benchmark_filter='^GPT2Block/fused/fp8.*/fwdbwd/' --xfbench_gpt2_dtypes=fp8 --xfbench_gpt2_fp8_recipe=current --benchmark_out="$R/gpt2_fp8_current.json" >"$R/xf.log" 2>&1
  echo "rc=$? $(($(date +%s) - t0)) s" >>"$R/xf.log"
fi
if [ "$(left)" -gt 60 ]; then
  timeout "$(left)" $B/xfbench "${X[@]}" --xfbench_t5_seqs=512 --xfbench_t5_batches=64 --xfbench_t5_backends=fused --xfbench_t5_dtypes=bf16,fp8 --benchmark_filter='^T5Encoder/fused/.*/fwdbwd/' --benchmark_out="$R/t5_fp8.json" >>"$R/xf.log" 2>&1
  echo "rc=$? $(($(date +%s) - t0)) s" >>"$R/xf.log"
fi
echo "total $(($(date +%s) - t0)) s" >>"$R/wall.txt"
tar -C "$OUT" -czf "$OUT/r.tgz" r && rm -rf "$R"
