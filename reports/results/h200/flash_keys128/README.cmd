# xfbench's flash attention, session 23 (2026-11-29), two calls on one NVIDIA H200 (nvidia-h200):
# (1) the Hopper forward at head dim 128 takes keys in tiles of 128 (two 64-key tiles one after the
# other; S one n128 product per warpgroup, P·V eight k16 steps; 242-243 registers, no spills; the
# head-dim-64 kernels' PTX unchanged), (2) the backward's block order sizes its tail by the heaviest
# block's work (grouped-query attention's dK/dV blocks are G times a dQ block's).
#
# run.sh (first call): test_kernels '*Attention*:*Flash*' 36/36 (tests.txt); flash_speed, new
# library and the library before (.carry/oldlib, main 39fba9b's kernels), alternating processes
# new, old, new, old (speed_*.jsonl: best of three rounds of 20 launches, each kernel alternating
# with cuDNN's SDPA in the same process; causal, bf16, packed bshd QKV, no dropout; TFLOPS count
# the causal half, backward twice the forward); LlamaBlock flash beside fused (layer_*.json, 3
# repetitions, steady protocol); test_cli 25/25 and test_bad_inputs 10/10 (the test plugins
# carried: the first GPU-test call of this session had not carried them).
#   flash_speed --out=speed_<new|old>_<i>.jsonl
#   xfbench --benchmark_repetitions=3 --xfbench_llama_model=<llama-3.1-8b|llama-3.2-1b>
#     --xfbench_llama_seqs=4096 --xfbench_llama_batches=<2|4> --xfbench_llama_dtypes=bf16
#     --benchmark_filter='^LlamaBlock/(flash|fused)/bf16/'
# compute-sanitizer memcheck there found 16 out-of-bounds 2-byte writes (memcheck_before_fix.txt):
# the dropout keep bits of the empty second half of a last 128-key tile (Sk an odd multiple of 64)
# were written past the row's words (the next row's words with the same Philox bits, so no result
# changed; past the buffer at the last row). Fixed (drop_tile draws and saves nothing past Sk) and
# the test keeps a poisoned guard after the bits (check_flash).
#
# run_d.sh (second call, the fix): memcheck 0 errors and racecheck 0 hazards on
# FlashHeadDim128MatchesReference (bf16) and FlashGqaMatchesReference (fp16); test_kernels 36/36;
# test_llama_block Backends/LlamaGpu.* 19/19 (flash forward and backward against float64);
# TrainStep llama-3.2-3b s4096 b1 bf16 (d/train_3b.json):
#   xfbench --benchmark_repetitions=3 --xfbench_suite=all --xfbench_train_models=llama-3.2-3b
#     --xfbench_train_seqs=4096 --xfbench_train_batches=1 --xfbench_train_backends=fused,flash
#     --benchmark_filter='^TrainStep/(fused|flash)/llama-3.2-3b/bf16/seq:4096/batch:1/accum:1/ckpt:off/adamw:fused/iter'
#
# Results, ms (old -> new, ranges over the two processes of each; cuDNN in the same processes):
#   shape (causal, GQA 32:8 / 24:8)  forward flash       cuDNN   backward flash      cuDNN
#   llama-3.1-8b b2 s4096 (hd 128)   0.706 -> 0.629 -11% 0.461   2.17-2.21 -> 2.00-2.12 -6%  1.49-1.56
#   llama-3.1-8b b1 s8192            1.347 -> 1.178 -13% 0.879   4.442 -> 4.247 -4%  2.75-2.80
#   llama-3.2-3b b1 s4096            0.274 -> 0.245 -11% 0.199   0.810 -> 0.769 -5%  0.61-0.63
#   llama-3.2-1b b4 s2048 (hd 64)    0.209 (same)        0.181   0.842 -> 0.745 -12% 0.57
#   llama-3.2-1b b4 s4096            0.766 (same)        0.634   2.954 -> 2.767 -6%  1.85-1.91
#   llama-3.2-1b b4 s8192            2.942 (same)        2.41    11.15 -> 11.06 -1%  6.82-6.86
#   gpt2-medium b64 s1024 (no GQA)   0.469 (same)        0.391   1.704 -> 1.713 +0.5% 1.35-1.38
#   gpt2-medium b8 s1024             0.064 -> 0.063      0.059   0.227 -> 0.224 -1%  0.193
# flash / cuDNN now: forward 0.73-0.81x at head dim 128, 0.82-0.87x at 64; backward 0.65-0.80x.
# In the layer (new library, this call): llama-3.1-8b s4096 b2 fwd flash 6.313 vs fused 6.181 ms,
#   fwd+bwd 19.988 vs 19.297 (0.965x; session 21: 0.959x); llama-3.2-1b s4096 b4 fwd 4.177 vs 4.044,
#   fwd+bwd 13.795 vs 12.716 (0.92x). TrainStep llama-3.2-3b s4096 b1: flash 188.64 ms vs fused
#   181.41 (0.962x; session 21: 188.57 vs 180.48, 0.957x).
