// What a launcher (mpirun, srun, torchrun) tells each process it starts, read from its
// environment variables.
#pragma once

namespace xfbench::host {

// This process's rank in the job, or nullptr when no launcher started it.
const char* launcher_rank();

// Its rank among the job's processes on this node, or -1 when no launcher says.
int launcher_local_rank();

// The GPU for the one-GPU cases: `flag` when --xfbench_device was given; else under a launcher
// the node-local rank modulo the visible GPUs (the GPU its multi-GPU cases use, so the ranks do
// not all share GPU 0); else 0.
int default_device(bool flag_given, long flag, int local_rank, int visible);

}  // namespace xfbench::host
