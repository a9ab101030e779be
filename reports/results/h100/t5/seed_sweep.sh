#!/bin/sh
# The seeds' T5 table (issue #17): T5Encoder and T5Decoder of t5-large, fp16, training mode, batch
# 2..128 at one sequence length, every xfbench backend, then HF T5Block eager (the peer), same
# steady protocol, one device call:  seed_sweep.sh <seq> <out dir> <build dir with bin/, lib/>
# Validation is off: the same block configurations validated in the default suite's cases.
set -u
seq=$1 out=$2 bin=$3/bin
timeout 390 "$bin/xfbench" --benchmark_filter="^T5(Encoder|Decoder)/(unfused|fused|flash)/fp16/fwd(bwd)?/seq:$seq/" \
  --xfbench_validate=false --benchmark_out="$out/t5_seed_s$seq.json" --benchmark_out_format=json
echo "xfbench rc=$?"
timeout 190 python3 reports/peer_torch.py --families T5Encoder,T5Decoder --seed-shapes \
  --filter "/fp16/.*/seq:$seq/" --repetitions 1 --out "$out/t5_seed_s${seq}_torch.json"
echo "peer rc=$?"
