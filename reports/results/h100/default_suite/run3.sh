#!/usr/bin/env bash
# Device calls 3 and 4 of session 13 (protocol v4, the 47-case default suite):
#   run3.sh suite REGEX   the default suite timed end to end (wall seconds, process start included),
#                         then every default case matching REGEX alone (one process each)
#   run3.sh alone REGEX   only the alone runs
# Alone runs go to alone_<part>.json (merged); the suite to default_v4.json with its timestamped log.
set -uo pipefail
B=build/device
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:${LD_LIBRARY_PATH:-}
mode="$1" regex="$2" part="${3:-a}"
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv,noheader >"$OUT/gpu_$part.txt"
if [ "$mode" = suite ]; then
  start=$(date +%s.%N)
  "$B"/bin/xfbench --benchmark_out="$OUT"/default_v4.json --benchmark_out_format=json 2>&1 |
    while IFS= read -r l; do printf '%s %s\n' "$(date +%s.%N)" "$l"; done >"$OUT"/default_v4.log
  end=$(date +%s.%N)
  echo "default suite wall: $(python3 -c "print(round($end - $start, 1))") s" | tee "$OUT"/wall.txt
fi
mkdir -p /tmp/alone
"$B"/bin/xfbench --benchmark_list_tests 2>/dev/null | grep -E "$regex" >/tmp/alone/names.txt
while IFS= read -r name; do
  f="/tmp/alone/$(echo "$name" | tr '/:' '__').json"
  "$B"/bin/xfbench "--benchmark_filter=^${name}\$" --benchmark_out="$f" \
    --benchmark_out_format=json >/dev/null 2>&1 || echo "alone run failed: $name"
done </tmp/alone/names.txt
python3 - "$OUT/alone_$part.json" /tmp/alone/*.json <<'PY'
import json, sys
out, files = sys.argv[1], sys.argv[2:]
docs = [json.load(open(f)) for f in files if f.endswith(".json")]
merged = {"context": docs[0]["context"] if docs else {},
          "benchmarks": [b for d in docs for b in d["benchmarks"]]}
json.dump(merged, open(out, "w"), indent=1)
print(len(merged["benchmarks"]), "alone cases in", out)
PY
