# FP8 training accuracy of gpt2-medium s1024 b8 (issue 34), one NVIDIA H200 (nvidia-h200), session
# 18, 2026-11-28, three device calls on the build of c7f92b9 (+ XFBENCH_LOSSES in call C):
#   call A (.carry/s18a.sh): fp8 recipe current, dropout 0.1 -> callA_gpt2_current.json, callA_xf.log:
#     after 30 steps fp8 6.6666 vs bf16 7.3562/7.4556 (-9.37%), after 200 1.3686 vs 1.3664/1.3671.
#   call B (.carry/s18b.sh): recipe delayed, --xfbench_train_dropout_pct=0 ->
#     callB_gpt2_delayed_dropout0.json: after 30 6.3383 vs 6.2146/6.2184 (+1.93%), after 200 +0.13%.
#   call C (.carry/s18c.sh): XFBENCH_LOSSES=1, recipe current dropout 0 and recipe delayed dropout
#     0.1 -> callC_losses.log (every step's loss of both bf16 runs and the fp8 run).
# Reading (callC_losses.log): the loss spikes on single steps early on (dropout 0.1, bf16: step 26
#   6.94 -> 11.12 -> 6.84; its second run 8.77 at that step), in bf16 as in fp8, and a spike's
#   timing moves between two runs from the same start. The check's statistic was the mean of the
#   five steps ending at 30, which one spike decides (delayed: fp8 6.693 vs bf16 7.582/7.050,
#   -5.06%). With the median of those five (train_validate.cpp since this session): delayed dropout
#   0.1 fp8 6.758 inside bf16's 6.718-6.830; current dropout 0 fp8 6.204 vs 6.186-6.201 (+0.05%);
#   after 200 steps +0.16% both. Recomputed from the curves with:
#   python3 - < the snippet in the session note (median of losses[25:30] and [195:200]).
