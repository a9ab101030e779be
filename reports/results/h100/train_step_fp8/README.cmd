# TrainStep llama-3.2-1b s4096 b4 in FP8 against bf16, one H100 80GB HBM3 (nvidia-h100-x1),
# 2026-11-28, session 15 (issue 34). Two device calls on the same warm machine:
#   call E: xfbench --benchmark_filter='^TrainStep/' --xfbench_train_models=llama-3.2-1b \
#             --xfbench_train_batches=4 --xfbench_train_precisions=bf16,fp8      (train_fp8_delayed_validated.json)
#   call F: run.sh: fp8 current validated (train_fp8_current.json); bf16 and fp8 delayed timed with
#           --xfbench_validate=false (train_fp8_speed.json); one repetition each.
#
# Speed (call F, one process): bf16 257.97 ms/step (15.5 samples/s, 58.0% MFU of the bf16 peak,
# 46.3 GB); fp8 delayed 215.63 ms (1.196x, 49.4 GB). The 1B model's GEMMs are small (hidden 2048):
# the issue's 1.35x target is for 3B and gpt2-xl, not measured this session.
#
# Accuracy (the validation's rule: the mean loss over 31 steps on one batch within 1% of the bf16
# step's, same data and initialisation): FAILS at 1B — delayed +63.3% (2.604 vs 1.595), current
# +6.7% (1.702 vs 1.594); both reach ~0 by step 30 (0.0015 / 0.0007 vs 0.0004). Tiny Llama
# (tests_summary.txt): delayed +0.73%, current +1.12%. Reading: memorising one batch shrinks the
# gradients by orders of magnitude within 30 steps; the delayed recipe's scale follows the largest
# amax of its 1024-step history (the first steps'), so later gradients underflow E5M2; and its first
# step casts at scale 1. The current recipe follows each step's amax and comes within 6.7%.
# Gradients of the tiny Llama in fp8 (current, one step) against float64: worst rel_l2 0.120.
