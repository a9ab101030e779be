# 2x H200 (device tool), 2026-11-22: the MPI build (cmake -DXFBENCH_WITH_MPI=ON, sm_90), one rank per
# GPU under Open MPI 4.1.4 (Debian's openmpi-bin/libopenmpi3 unpacked there; OPAL_PREFIX set).
mpirun -np 2 --bind-to none -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE build/mpi/bin/xfbench --benchmark_filter='^NCCL/(allreduce|allgather|sendrecv)/fp32/gpus:2/bytes:(1048576|1073741824)/' --benchmark_repetitions=3 --benchmark_report_aggregates_only=true --benchmark_out=nccl_mpi.json --benchmark_out_format=json
# Rank 1 wrote nccl_mpi.json.rank1 (same numbers). allreduce 1 GiB busbw 325 GB/s (the single-process
# run gave 327), wrong=0 everywhere.
