#!/usr/bin/env bash
# Session 30 (issue 32): the FFN's GELU-products choice kept in XFBENCH_GEMM_PLANS and timed as the
# steady final (~50 ms runs after half as long untimed). In ../s30_alone_first/ the suite chose
# unfused for GPT2Block's forward (timed hot, after the searches) and the case alone fused (timed
# cold), 2.3% apart. Here: the tests of the choice, then the default suite's BERT and GPT-2 cases
# with a plans file, then each alone with it (it must adopt the suite's choice and time within 1%).
# Build: branch s30-try + the choice change (worktree /work/s28wt), carried as build/s30new.
# Run: bash reports/results/h100/default_suite/s30_ffn_choice/run.sh
set -uo pipefail
t0=$SECONDS
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:${LD_LIBRARY_PATH:-}
B=build/s30new/bin
R=$OUT/r
mkdir -p "$R/alone"
trap 'tar -czf "$OUT/r.tgz" -C "$OUT" r' EXIT # a call brings back 8 files at most
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw,power.limit \
  --format=csv,noheader >"$R/gpu.txt"
L=$R/steps.log
step() { echo "$1 rc=$2 t=$((SECONDS - t0)) s" >>"$L"; }
timeout 90 "$B/test_bert_layer" --gtest_filter='BertGpuFfnProducts.*' >"$R/tests.txt" 2>&1
step test_bert_layer $?
timeout 60 "$B/test_kernels" --gtest_filter='*ChooseFaster*:*choose*' >>"$R/tests.txt" 2>&1
step test_kernels $?
export XFBENCH_GEMM_PLANS=$R/plans.tsv XFBENCH_GEMM_LOG=1
F='^(BertLayer|GPT2Block)/'
timeout 150 "$B/xfbench" --benchmark_filter="$F" --benchmark_out="$R/suite.json" \
  --benchmark_out_format=json >"$R/suite.log" 2>&1
step suite $?
"$B/xfbench" --benchmark_list_tests --benchmark_filter="$F" 2>/dev/null >"$R/cases.txt"
i=0
while IFS= read -r name; do
  i=$((i + 1))
  [ $((SECONDS - t0)) -gt "${UNTIL:-300}" ] && break
  timeout 45 "$B/xfbench" --benchmark_filter="^${name}\$" --benchmark_out="$R/alone/$i.json" \
    --benchmark_out_format=json >>"$R/alone.log" 2>&1
  step "alone $i" $?
done <"$R/cases.txt"
