# Head dim 128 with one m64n128k16 wgmma where an N-major operand spans both 64-column panels
# (LBO 8192 bytes: P·V forward; dV, dK, dQ backward) instead of two n64 ones; session 21, one
# NVIDIA H200, one call (run.sh): test_kernels '*Flash*' 18/18, memcheck 0 errors, then steady
# protocol, 3 repetitions, medians (ms), llama-3.1-8b bf16:
#                      fused (cuDNN)   flash, two n64 (../)   flash, n128 (this)
#   fwd s4096 b2       6.126           6.299                  6.329
#   fwdbwd s4096 b2    19.074          19.992                 19.996
#   fwdbwd s8192 b1    20.823          22.835                 22.651
# No change in time (within the runs' spread); kept as the simpler code.
