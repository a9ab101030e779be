# H100, 2026-11-22: a smoke run of the peer runner on the opt-in families (small shape, 2 repetitions)
python3 reports/peer_torch.py --families GPT2Block,T5Encoder,T5Decoder,TrainStep --layer-shapes 128x8 --repetitions 2 --min-time 0.05 --warmup 0.1 --out peer_other_families.json
