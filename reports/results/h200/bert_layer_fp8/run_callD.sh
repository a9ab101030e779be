#!/usr/bin/env bash
# shellcheck disable=SC2129
# Session 17, call D (issue 34): BERT's post-LN block in FP8 on the GPU (every part and backend
# against float64; the tiny GPT-2 and BERT language models' FP8 gradients), then BertLayer
# bert-large s512 b64 and TrainStep gpt2-medium s1024 b8 in bf16 vs fp8.
set -uo pipefail
B=build/device/bin
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:${LD_LIBRARY_PATH:-}
R=$OUT/r; mkdir -p "$R"
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >"$R/gpu.txt"
L="$R/tests.log"
run() { echo "=== ${*:2} ($(($(date +%s) - t0)) s)" >>"$L"; timeout "$1" "${@:2}" >>"$L" 2>&1; echo "rc=$?" >>"$L"; }
run 90 $B/test_bert_layer --gtest_filter='Parts/BertGpu.*:BlockConfigCheck.*'
run 60 $B/test_train_step --gtest_filter='TrainStepGpu.Fp8Gpt2AndBert*'
left() { echo $((440 - ($(date +%s) - t0))); }
X=(--benchmark_repetitions=3 --benchmark_out_format=json)
timeout $(( $(left) / 2 )) $B/xfbench "${X[@]}" --xfbench_bert_seqs=512 --xfbench_bert_batches=64 --xfbench_bert_backends=fused --xfbench_bert_dtypes=bf16,fp8 --benchmark_filter='^BertLayer/fused/.*/fwdbwd/' --benchmark_out="$R/bert_fp8.json" >"$R/xf.log" 2>&1
echo "rc=$? $(($(date +%s) - t0)) s" >>"$R/xf.log"
timeout "$(left)" $B/xfbench "${X[@]}" --xfbench_train_models=gpt2-medium --xfbench_train_seqs=1024 --xfbench_train_batches=8 --xfbench_train_precisions=bf16,fp8 --benchmark_filter='^TrainStep/fused/gpt2-medium/' --benchmark_out="$R/train_gpt2_fp8.json" >>"$R/xf.log" 2>&1
echo "rc=$? $(($(date +%s) - t0)) s" >>"$R/xf.log"
tar -C "$OUT" -czf "$OUT/r.tgz" r && rm -rf "$R"
