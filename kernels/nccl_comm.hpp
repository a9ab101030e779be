// NCCL communicators for the multi-GPU cases (the NCCL family, data-parallel TrainStep), and the
// few MPI calls multi-node runs need. One process drives every GPU of a node (ncclCommInitAll).
// Built with XFBENCH_WITH_MPI and started by mpirun/srun, each process drives one GPU and the NCCL
// unique id is broadcast with MPI_Bcast. Its own shared library (libxfbench_nccl), apart from
// libxfbench_kernels: only the plugins that talk NCCL need libnccl (and MPI) to load, and the
// plugins sharing it share one MPI session and one communicator cache.
#pragma once

#include <nccl.h>

#include <string>
#include <vector>

namespace xfbench::kernels {

// MPI: initialised at registration only when the build has MPI and a launcher started the process
// (OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_RANK or SLURM_NTASKS > 1 set); otherwise one process.
bool mpi_enabled();
void mpi_init_if_launched();  // no GPU work; finalised at exit
int world_rank();             // 0 without MPI
int world_size();             // 1 without MPI
int local_rank();             // rank among the processes of this node
long long sum_over_ranks(long long v);
double max_over_ranks(double v);
std::string mpi_build_status();  // "built with MPI (<library>)" or "built without MPI"

// GPU indices from --xfbench_gpus's items ("0", "1", ...): InvalidArgument for one that is not an
// index (0..1023) or given twice.
std::vector<int> gpu_indices(const std::vector<std::string>& items);

// This process's GPUs: under MPI the one of its local rank (of `visible`); else `gpus`
// (--xfbench_gpus) or, when empty, the first `wanted` visible ones (all when wanted <= 0).
// Unsupported, naming what is missing, when a listed GPU is not visible or fewer than `wanted`.
std::vector<int> local_devices(const std::vector<int>& gpus, int visible, int wanted = 0);

// One communicator per local GPU; `ranks[i]` is the global rank driving `devices[i]`.
struct Communicator {
  std::vector<int> devices;
  std::vector<int> ranks;
  std::vector<ncclComm_t> comms;
  int nranks = 0;
};

// Communicators over `devices` (this process's GPUs), created once and kept across cases (NCCL
// start-up takes a second); destroyed at exit or when the device list changes.
Communicator& communicator(const std::vector<int>& devices);
// After an error: aborts the communicators so the next case starts afresh.
void abort_communicator();

}  // namespace xfbench::kernels
