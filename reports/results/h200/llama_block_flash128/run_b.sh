#!/usr/bin/env bash
# shellcheck disable=SC2129,SC2054
# Session 21, call B (one H200), on branch s21 (flash_hd128_fwd + zero3_accum + graph_step patches,
# device build): the flash forward at head dim 128 (issue 36) against float64 and under memcheck,
# the LlamaBlock 8B forward on flash beside fused; the graph timer test and TrainStep gpt2 with
# and without /graph:on (issue 33); whether the machine has an MPI (issue 38).
set -uo pipefail
B=build/device/bin
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:${LD_LIBRARY_PATH:-}
R=$OUT/r; mkdir -p "$R"
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >"$R/gpu.txt"
{ command -v mpirun mpiexec orterun prterun; ls -d /usr/lib/x86_64-linux-gnu/openmpi* /opt/*mpi* 2>&1;
  python3 -c "import mpi4py; print(mpi4py.get_config())" 2>&1; } >"$R/mpi.txt" 2>&1
timeout 150 $B/test_kernels --gtest_filter='*Flash*' >"$R/tests.log" 2>&1
echo "rc=$? $(($(date +%s) - t0)) s" >>"$R/tests.log"
timeout 60 compute-sanitizer --tool memcheck $B/test_kernels --gtest_filter='*FlashHeadDim128*' >"$R/memcheck.log" 2>&1
echo "rc=$? $(($(date +%s) - t0)) s" >>"$R/memcheck.log"
timeout 120 $B/test_llama_block --gtest_filter='Backends/LlamaGpu.*:LlamaGpuCausal*' >>"$R/tests.log" 2>&1
echo "rc=$? $(($(date +%s) - t0)) s" >>"$R/tests.log"
timeout 40 $B/test_gpu_timer --gtest_filter='*Graph*' >>"$R/tests.log" 2>&1
echo "rc=$? $(($(date +%s) - t0)) s" >>"$R/tests.log"
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^rc=|Failure|head dim|FAILED" "$R/tests.log" >"$R/tests_summary.txt"
timeout 120 $B/xfbench --benchmark_repetitions=3 --benchmark_out_format=json \
  --xfbench_llama_seqs=4096 --xfbench_llama_batches=2 --xfbench_llama_dtypes=bf16 \
  --benchmark_filter='^LlamaBlock/(fused|flash)/bf16/fwd/seq:4096/batch:2' --benchmark_out="$R/llama_fwd.json" >"$R/xf.log" 2>&1
echo "rc=$? $(($(date +%s) - t0)) s" >>"$R/xf.log"
for g in false true; do
  timeout $((570 - ($(date +%s) - t0))) $B/xfbench --benchmark_repetitions=3 --benchmark_out_format=json \
    --xfbench_train_models=gpt2 --xfbench_train_batches=4,8 --xfbench_train_seqs=1024 \
    --xfbench_train_dropout_pct=0 --xfbench_train_graph=$g \
    --benchmark_filter='^TrainStep/fused/gpt2/bf16/seq:1024/batch:(4|8)/accum:1/ckpt:off/adamw:fused/dropout:0/(graph:on/)?iter' \
    --benchmark_out="$R/train_graph_$g.json" >>"$R/xf.log" 2>&1
  echo "rc=$? $(($(date +%s) - t0)) s" >>"$R/xf.log"
done
tar -C "$OUT" -czf "$OUT/r.tgz" r && rm -rf "$R"
