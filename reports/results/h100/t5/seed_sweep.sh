#!/bin/sh
# The seeds' T5 table (issue #17): T5Encoder and T5Decoder of t5-large, fp16, training mode, batch
# 2..128 at one sequence length, every xfbench backend, and HF T5Block eager (the peer), same
# steady protocol:  seed_sweep.sh <seq> <out dir> <build dir with bin/, lib/> [xf|torch|both]
# At seq 512 xfbench's 84 cases take ~7.5 minutes and the peer's 28 about 3, so a device call (at
# most 10 minutes) runs one side there (`xf`, then `torch`). A 5th argument replaces xfbench's
# filter (e.g. '^T5Decoder/flash/fp16/fwd(bwd)?/seq:512/'; its JSON is then t5_seed_s<seq>_part.json).
# Validation is off: the same block configurations validated in the default suite's cases.
set -u
seq=$1 out=$2 bin=$3/bin part=${4:-both} only=${5:-}
if [ "$part" != torch ]; then
  filter=${only:-"^T5(Encoder|Decoder)/(unfused|fused|flash)/fp16/fwd(bwd)?/seq:$seq/"}
  timeout 560 "$bin/xfbench" --benchmark_filter="$filter" --xfbench_validate=false \
    --benchmark_out="$out/t5_seed_s$seq${only:+_part}.json" --benchmark_out_format=json
  echo "xfbench rc=$?"
fi
if [ "$part" != xf ]; then
  timeout 560 python3 reports/peer_torch.py --families T5Encoder,T5Decoder --seed-shapes \
    --filter "/fp16/.*/seq:$seq/" --repetitions 1 --out "$out/t5_seed_s${seq}_torch.json"
  echo "peer rc=$?"
fi
