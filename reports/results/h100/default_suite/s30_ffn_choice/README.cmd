# Session 30 (2026-12-07), one call on one NVIDIA H100 80GB HBM3 (nvidia-h100-x1), branch s30-try
# + the FFN choice in the plans file (choose_faster's ChoiceRecord; the steady final's ~50 ms runs):
#   tar -xJf build/s30b.tar.xz -C build && UNTIL=240 bash run.sh   (244 s)
# Tests on the GPU: BertGpuFfnProducts.PlansFileCarriesTheChoiceToTheNextRun (new: the first run
# times and writes "choice:ffn gelu products ..." to the file, the second reads it and times
# nothing, same way) and TuneChoosesOnceForEveryBlockOfTheShape passed; ChooseFasterGpu.
# KeepsTheIncumbentUnlessClearlyBeaten passed with the new timing.
# The suite part was meant as the default suite's BERT and GPT-2 cases, but a filter picks from
# every case (README), so it ran the BertLayer sweep until its 150 s time-out (26 cases, 17 FFN
# choices written to plans.tsv); the cases alone were the sweep's first five (batch 2-32, launch
# bound, labelled noisy): each adopted the suite's choice ("as XFBENCH_GEMM_PLANS recorded"). The
# default suite's cases against alone with this build did not run (no device time left).
