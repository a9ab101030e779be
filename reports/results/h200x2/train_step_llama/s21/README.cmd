# Llama TrainStep across 2 NVIDIA H200s (nvidia-h200-x2, NV18), session 21, 2026-11-28, one call
# (run.sh, 456 s; the 3B zero2/zero3 cases did not start before the call's time ran out):
# bf16, s4096, fused AdamW, no checkpointing, steady protocol, 3 repetitions, medians; scaling =
# samples/s on N GPUs / (N x one GPU's), the same batch per GPU; every case validated (2 ranks ==
# one GPU with 2x the batch after 3 steps, and the loss rules).
#                                  ms/step   samples/s  MFU/GPU  GB/GPU  collectives hidden  scaling
#   llama-3.2-1b b4  one GPU       251.04    15.93      59.5%    43.1
#                    dp   2 GPUs   259.58    30.82      57.6%    43.1    89%                 0.967
#                    zero2 2 GPUs  257.01    31.13      58.1%    35.7    92%                 0.977
#                    zero3 2 GPUs  259.89    30.78      57.5%    34.2    97%                 0.966
#                    zero3 under mpirun -np 2 (the MPI build, one GPU per rank; system Open MPI
#                      of the machine, libmpi_cxx carried): 259.55 ms, 57.6%, 34.2 GB: 1.001x the
#                      one-process case; validated on both ranks (xf_1b_mpi.json, .rank1)
#   llama-3.2-3b b1  one GPU       179.35    5.58       54.3%    63.9
#                    dp   2 GPUs   193.12    10.36      50.4%    63.9    68%                 0.929
# mpirun -np 2 --bind-to none -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE build/mpi/bin/xfbench ...
#   (OMPI_ALLOW_RUN_AS_ROOT=1): the p2p:off case the filter also matched is refused with its
#   reason (NCCL_P2P_DISABLE=1 must be in the environment), as designed.
# tests_summary.txt: test_parallel 7/7 on the two GPUs, with zero3 and gradient accumulation
#   (bert-large accum 2 fp16: master weights 1.6e-05 from one GPU with 2x the batch).
