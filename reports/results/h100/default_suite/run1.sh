#!/usr/bin/env bash
# Device call 1 of session 13: GPU tests of the edges work, then the default suite timestamped and
# stopped by SIGTERM at 400 s (the interrupted JSON on a real run, and per-case wall times).
set -uo pipefail
B=build/device
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$OUT"/gpu.txt
for _ in 1 2 3 4 5; do "$B"/bin/test_gpu_timer --gtest_brief=1; done > "$OUT"/tests.log 2>&1
"$B"/bin/test_cli --gtest_brief=1 >> "$OUT"/tests.log 2>&1
"$B"/bin/test_bad_inputs --gtest_brief=1 --gtest_filter=-*Fuzz* >> "$OUT"/tests.log 2>&1
grep -E "^\[  (PASSED|FAILED) |Failure" "$OUT"/tests.log
timeout -s TERM 400 "$B"/bin/xfbench --benchmark_out="$OUT"/default.json --benchmark_out_format=json 2>&1 |
  while IFS= read -r l; do printf '%s %s\n' "$(date +%s.%N)" "$l"; done > "$OUT"/default.log
tail -3 "$OUT"/default.log
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(len(d['benchmarks']), 'cases;', d.get('interrupted'))" "$OUT"/default.json
