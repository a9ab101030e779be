#!/usr/bin/env bash
# Device call 2 of session 13: the exit-code path on the GPU (a faulty GPU through
# report_faulty_gpu -> exit 5; a GPU without memory -> exit 1), then the 44 default-suite cases
# call 1 did not reach (T5, TrainStep, Vector, Memcpy; the filter lists exactly them), timestamped.
set -uo pipefail
B=build/device
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:${LD_LIBRARY_PATH:-}
"$B"/bin/test_burn --gtest_brief=1 \
  --gtest_filter='BurnGpu.HostBurnJsonAndFaultyExitCode:BurnGpu.WorkerWithoutMemory*' > "$OUT"/tests.log 2>&1
"$B"/bin/test_cli --gtest_brief=1 --gtest_filter='Cli.GpuFaults*:Cli.Telemetry*' >> "$OUT"/tests.log 2>&1
grep -E "^\[  (PASSED|FAILED) |Failure" "$OUT"/tests.log
F='^(T5(Encoder|Decoder)/[a-z]+/fp16/[a-z]+/seq:512/batch:64/|TrainStep/fused/(bert-large/bf16/seq:128/batch:64|bert-large/bf16/seq:512/batch:16|gpt2-medium/bf16/seq:1024/batch:8)/accum:1/ckpt:off/adamw:fused/iter|Vector/(scale/fp32/|[a-z]+/(fp32|fp16|bf16)/n:268435456/)|Memcpy/[a-z2]+/(pinned|device)/(ce|sm)/bytes:268435456/)'
timeout -s TERM 420 "$B"/bin/xfbench "--benchmark_filter=$F" --benchmark_out="$OUT"/rest.json \
  --benchmark_out_format=json 2>&1 |
  while IFS= read -r l; do printf '%s %s\n' "$(date +%s.%N)" "$l"; done > "$OUT"/rest.log
tail -2 "$OUT"/rest.log
