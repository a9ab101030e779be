# H100 80GB HBM3 (device tool), 2026-11-22 session 5. torch 2.11 (its own cuBLAS 13.1.0, same as the
# system's) and xfbench alternating per case (plugins/matmul/torch_peer.py paired: torch, xfbench,
# xfbench, torch, ...; xfbench a fresh process per run, its search included). Paired JSON now also
# keeps each xfbench run's label (the kernel it chose) and NVML telemetry.
#
# 1. Which kernel does torch.matmul run at n=4096? (torch_api_calls.txt, kernels_*.txt)
CUBLAS_LOGINFO_DBG=1 CUBLASLT_LOG_LEVEL=5 python3 tm.py bf16 1     # 4096² torch.matmul once
#   -> cublasGemmEx(CUBLAS_GEMM_DEFAULT_TENSOR_OP), cuBLASLt heuristic -> algo 66, 32 MiB workspace
ncu --clock-control none --metrics gpu__time_duration.sum --csv python3 tm.py bf16,fp16,tf32 4
ncu ... --kernel-name regex:'gemm|sm90|xmma|cutlass' xfbench --benchmark_filter='Matmul/(bf16|fp16|tf32)/NN/m:4096/' --xfbench_matmul_topk=1
#   -> the same three kernels on both sides: nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT (bf16),
#   nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_coopA_NNT (fp16), sm90_xmma_gemm_..._tilesize128x256x32 (tf32).
#
# 2. Search keeping its incumbent (cublasGemmEx) unless a challenger wins 6 of 7 rounds by >= 1%:
python3 plugins/matmul/torch_peer.py paired --names names4096.txt --xfbench xfbench --pairs 11 --out paired4096_11pairs.json
#   -> tf32 0.998, fp16 1.003, bf16 0.982 (xfbench on cublasGemmEx in 30 of 33 runs)
# bf16 4096, 11 pairs each: --xfbench_matmul_search=false 0.996 / 1.000; search 0.994; search with
# --xfbench_matmul_cooldown_ms=1000 on xfbench's side 0.997 (bf16_4096_*.json; mean sm_MHz in the
# JSON telemetry 1950-1965 after the search, 1980 without it or after 1 s idle).
# Telemetry off/on (--xfbench_telemetry=false), 7 pairs, twice each: 0.976-1.003 either way
# (telemetry_*.json). In these runs fp16/bf16 4096 sometimes chose a 128x128 tile, which lost in
# every such pair (0.91-0.98).
#
# 3. Why the 128x128 tile: probe timing cublasGemmEx, 128x128 and 256x128 three ways (TFLOPS):
#   back-to-back 10 ms rounds: bf16 699 / 677 / 723, fp16 634 / 649 / 634 (128x128 can win)
#   back-to-back 50 ms rounds: bf16 670 / 695 / 706, fp16 660 / 656 / 679
#   150 ms idle then 100 ms (the benchmark's protocol): bf16 734 / 715 / 742, fp16 719 / 680 / 707
# So a challenger now also has to win five ~50 ms runs from 150 ms idle (GemmTuneOptions::idle_ms).
#
# 4. --xfbench_matmul_variants=true (each ranked kernel under every custom option and CTA
# swizzling cuBLASLt accepts: 9 -> 37 candidates at fp16/bf16 4096): the search still ends on
# cublasGemmEx in 20 of 21 runs; paired 0.985 / 0.995 / 0.987 (paired4096_variants.json,
# xfbench_variants_*.json). No configuration near cuBLAS's ranked kernels beats torch's at 4096.
#
# 5. Final build (from-idle confirmation), another H100:
python3 plugins/matmul/torch_peer.py paired --names names4096.txt --xfbench xfbench --pairs 7 --out paired4096_final.json
python3 plugins/matmul/torch_peer.py paired --names names.txt --xfbench xfbench --pairs 5 --out paired_squares_final.json
#   -> 4096: tf32 0.999, fp16 0.991, bf16 0.987, xfbench on torch's own kernel in all 21 runs;
#   squares (paired_squares_final.txt): 7 of 12 with a median ratio >= 1, 0.980-1.021. Where the
#   search picked another kernel than torch's it won: fp16 2048 (128x128) 0.996-1.039, fp16 8192
#   (256x128) 0.997-1.056, bf16/fp16 16384 (128x256) 1.009-1.034. Where it ran torch's kernel
#   (all 4096 runs, tf32 everywhere) the ratio is a coin flip around 1: over the 36 such runs at
#   4096 in this call, mean 0.996, single runs 0.952-1.056.
