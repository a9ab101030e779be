#!/usr/bin/env bash
# Session 30 (issue 32): the default suite (the README's main command without its build) timed end
# to end on one H100, process start included, every line timestamped, with XFBENCH_GEMM_PLANS (the
# suite searches, each case alone adopts its choices); then the cases from ALONE_FROM on (default
# 20: TrainStep, Memcpy, Vector, which ../s29_plans/ did not reach) alone in their own processes,
# same machine, build and protocol (until ALONE_UNTIL seconds, default 560; ALONE_FIRST: a regex
# of cases to run alone before the others).
# Carry: build/device/bin/xfbench build/device/lib
# Run: bash reports/results/h100/default_suite/s30_alone_rest/run.sh
set -uo pipefail
t0=$SECONDS
T=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=$T/cudnn/lib:$T/nccl/lib:${LD_LIBRARY_PATH:-}
X=${X:-build/device/bin/xfbench}
R=$OUT/r
mkdir -p "$R/alone"
export XFBENCH_GEMM_PLANS=${XFBENCH_GEMM_PLANS:-$R/plans.tsv}
trap 'tar -czf "$OUT/r.tgz" -C "$OUT" r' EXIT # a call brings back 8 files at most
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw,power.limit \
  --format=csv,noheader >"$R/gpu.txt"
start=$(date +%s.%N)
timeout 300 "$X" --benchmark_out="$R/suite.json" --benchmark_out_format=json 2>&1 |
  while IFS= read -r l; do printf '%s %s\n' "$(date +%s.%N)" "$l"; done >"$R/suite.log"
end=$(date +%s.%N)
echo "default suite wall: $(python3 -c "print(round($end - $start, 1))") s" >"$R/wall.txt"
"$X" --benchmark_list_tests 2>/dev/null | grep -v "^P2P/" >"$R/cases.txt" # one GPU: P2P skips
if [ -n "${ALONE_FIRST:-}" ]; then # the cases matching this regex alone first (added in session 31)
  { grep -E "$ALONE_FIRST" "$R/cases.txt"; grep -vE "$ALONE_FIRST" "$R/cases.txt"; } >"$R/order.txt"
  mv "$R/order.txt" "$R/cases.txt"
fi
i=0
while IFS= read -r name; do
  i=$((i + 1))
  [ "$i" -lt "${ALONE_FROM:-20}" ] && continue
  if [ $((SECONDS - t0)) -gt "${ALONE_UNTIL:-560}" ]; then
    echo "stopped before case $i ($name): time" >>"$R/alone.log"
    break
  fi
  timeout 45 "$X" --benchmark_filter="^${name}\$" --benchmark_out="$R/alone/$i.json" \
    --benchmark_out_format=json >>"$R/alone.log" 2>&1
done <"$R/cases.txt"
python3 - "$R/alone.json" "$R"/alone/*.json <<'PY'
import json, sys
docs = []
for f in sorted(sys.argv[2:], key=lambda f: int(f.rsplit("/", 1)[1].split(".")[0])):
    try:
        docs.append(json.load(open(f)))
    except (OSError, ValueError) as e:
        print("unreadable:", f, e)
merged = {"context": docs[0]["context"] if docs else {},
          "benchmarks": [b for d in docs for b in d["benchmarks"]]}
json.dump(merged, open(sys.argv[1], "w"), indent=1)
print(len(merged["benchmarks"]), "alone entries")
PY
rm -rf "$R/alone"
