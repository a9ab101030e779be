# Burn (issue #22) beside gpu-burn, H100 80GB HBM3 (SXM, 700 W cap), driver 580.159.04, CUDA 13.0,
# 2026-11-25, device preset (sm_90), build/burn-dev carried with burn-peer/ (gpu-burn's source from
# `fetch github:wilicc/gpu-burn` at 3ead140, git-ignored through .git/info/exclude, built on the
# device with `make COMPUTE=90`). Two device calls, on two different H100s (UUIDs in the logs):
#
# Call 1 (GPU-43b8a227): tests, inventory, memcheck, then the side-by-side script, which the call's
# own timeout stopped during the bf16 run (its JSONs but fp32's were lost to the 8-file limit; the
# console rows in call1_xfbench.log carry every counter):
export LD_LIBRARY_PATH=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib:$LD_LIBRARY_PATH
build/burn-dev/bin/xfbench --xfbench_devices > call1_devices.txt
build/burn-dev/bin/test_burn > call1_test_burn.log     # 29 tests pass (every dtype 3 s at full size)
compute-sanitizer --tool memcheck build/burn-dev/bin/test_burn --gtest_filter=BurnGpu.CleanBurnIsOk
reports/results/h100/burn/side_by_side.sh build/burn-dev 30   # gpu_burn -tc 30; xfbench tf32; gpu_burn 30; xfbench fp32; gpu_burn -d 30; xfbench fp64,bf16,...
#
# Call 2 (GPU-1e090feb), after fp32 and fp64 moved to layout NN (gpu-burn's; call 1 ran them NT):
build/burn-dev/bin/test_burn --gtest_filter='BurnGpu.*-BurnGpu.EveryDtypeBurnsClean:BurnGpu.Host*'  # 5 pass
reports/results/h100/burn/side_by_side.sh build/burn-dev 30 fp32 fp64 fp8
#
# Sustained TFLOPS over 30 s (gpu-burn: its last Gflop/s readings; xfbench: every product over the
# windows' GPU time, the bitwise comparison of each product included), both on the 700 W cap:
#   mode   gpu-burn (same call)    xfbench Burn                          ratio   xfbench TFLOPS/W
#   tf32   353.8-355.3 (call 1)    356.8 (min 354.1), 1497 MHz, 699 W    1.005   0.510
#   fp32    51.34 (call 2)          52.0 (min 51.6), 1952 MHz, 697 W     1.013   0.0746
#   fp64    53.39 (call 2)          52.96 (min 52.6), 1624 MHz, 700 W    0.992   0.0757
#   bf16        -                  680.5 (call 1), 1364 MHz, 699 W              0.974
#   fp16        -                  654.4 (call 1, 3 s test run), 1341 MHz        0.926
#   fp8         -                 1185.2 (call 2, e4m3 -> bf16), 1187 MHz        1.696
# In call 1, fp32 in layout NT ran 49.5 TFLOPS (call1_xfbench_fp32_nt.json, 1908 MHz on the power
# cap) against gpu-burn's 51.7; fp64 NT 52.7 against 53.2. Every burn: 0 errors, the first product
# within its float64 bound (worst/RMS: fp64 3e-14, fp32 6e-6, tf32 9.5e-4, bf16 8e-3, fp16 1e-3,
# fp8 5.7e-3), no Xid, ECC +0/+0. Targets: tf32 >= 357 missed by 0.06% (>= gpu-burn in the same
# call), fp32 >= 51.4 met, fp64 >= 53.3 missed (0.8% under gpu-burn in the same call).
