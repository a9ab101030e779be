# Burn on two GPUs (issue #22), 2x NVIDIA H200 (device tool, nvidia-h200-x2), 2026-11-27, build of
# main a79ea01 (device preset, sm_90, stripped copy build/c10); call 3 of
# ../train_step/README.cmd (../train_step/call3.sh). Both GPUs burn at once, one thread and stream each.
export LD_LIBRARY_PATH=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib:$LD_LIBRARY_PATH
build/c10/bin/xfbench --benchmark_filter='Burn/(fp64|bf16)' --xfbench_burn_dtypes=fp64,bf16 \
  --xfbench_burn_seconds=20 --xfbench_gpus=0,1 --benchmark_out=burn_2gpus.json --benchmark_out_format=json
#   exit 0; fp64 gpu0 54.5 / gpu1 54.9 TFLOPS (sum 109.4), bf16 681.2 / 684.1 (sum 1365), 0 errors,
#   reference 0/1024 off, both on the 700 W cap (sw_power_cap 99-100%), ECC +0, no Xid.
# A fault injected into GPU 1 only (bit 14 of element 7 of its product 2) is counted there, GPU 0
# stays OK, and the exit code is 5 (burn_2gpus_fault.json):
XFBENCH_BURN_TEST_FAULTS=1:2:7:14 build/c10/bin/xfbench --benchmark_filter='Burn/fp16' \
  --xfbench_burn_dtypes=fp16 --xfbench_burn_seconds=4 --xfbench_burn_mem_pct=20 --xfbench_gpus=0,1 \
  --benchmark_out=burn_2gpus_fault.json --benchmark_out_format=json
#   exit 5; gpu0 OK 656.0 TFLOPS; gpu1 FAULTY (1 error), 1 mismatch in window 0; faulty_gpus=1
