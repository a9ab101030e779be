// NCCL communicators for the multi-GPU cases (the NCCL family, data-parallel TrainStep), and the
// few MPI calls multi-node runs need. One process drives every GPU of a node (ncclCommInitAll).
// Built with XFBENCH_WITH_MPI and started by mpirun/srun, each process drives one GPU and the NCCL
// unique id is broadcast with MPI_Bcast. Its own shared library (libxfbench_nccl), apart from
// libxfbench_kernels: only the plugins that talk NCCL need libnccl (and MPI) to load, and the
// plugins sharing it share one MPI session and one communicator cache.
//
// No wait on other ranks can hang the job (issue #20): every wait on NCCL work (a stream or event
// carrying collectives) and on the other MPI ranks is polled, every ~0.1 ms, with a time-out
// (--xfbench_nccl_timeout_s). NCCL's asynchronous error, or the time-out, aborts the
// communicators and throws LibraryError naming the GPUs and the reason. Under MPI the job ends
// instead: one line on stderr naming the rank, its GPU, the case and the reason, then
// MPI_Abort(kRankFailed, exit 6); so does any error inside a collective_section (the part of a case
// whose collectives every rank joins), since the other ranks would wait for this one.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "xfbench/dtype.hpp"
#include "xfbench/error.hpp"
#include "xfbench/exit_codes.hpp"
#include "xfbench/flags.hpp"

namespace xfbench::kernels {

// The NCCL type of values stored as `t` (the SDK's element types: f32, f16, bf16, f64);
// InvalidArgument for FP8 bytes, which no collective here reduces. Inline: this library does not
// link the SDK, its callers do.
inline ncclDataType_t nccl_type(ElemType t) {
  switch (t) {
    case ElemType::f32:
      return ncclFloat32;
    case ElemType::f16:
      return ncclFloat16;
    case ElemType::bf16:
      return ncclBfloat16;
    case ElemType::f64:
      return ncclFloat64;
    default:
      XF_THROW(InvalidArgument, std::string("NCCL reductions of ") + to_string(t) + " values");
  }
}

constexpr double kDefaultNcclTimeoutSeconds = 300;

void set_nccl_timeout(double seconds);  // InvalidArgument outside (0, 86400]
double nccl_timeout_seconds();

// MPI: initialised at registration only when the build has MPI and a launcher started the process
// (OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_RANK or SLURM_NTASKS > 1 set); otherwise one process.
bool mpi_enabled();
void mpi_init_if_launched();  // no GPU work; finalised at exit
// What every plugin that talks NCCL calls at registration: --xfbench_nccl_timeout_s (read here,
// inline: this library does not link the SDK, the plugins do), then mpi_init_if_launched.
inline void init_at_registration() {
  set_nccl_timeout(flag_double("nccl_timeout_s", kDefaultNcclTimeoutSeconds,
                               "seconds a multi-GPU case waits on NCCL work or on the other MPI "
                               "ranks before it aborts (under MPI the job ends, exit 6)"));
  mpi_init_if_launched();
}
int world_rank();  // 0 without MPI
int world_size();  // 1 without MPI
int local_rank();  // rank among the processes of this node
// Reductions over the ranks (the value itself without MPI), waiting at most the time-out.
long long sum_over_ranks(long long v);
double max_over_ranks(double v);
void max_over_ranks(double* values, std::size_t count);  // in place: a timer's AgreeMax
std::string mpi_build_status();  // "built with MPI (<library>)" or "built without MPI"

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
// start-up takes a second); destroyed at exit or when the device list changes. Under MPI every
// rank meets first (a barrier within the time-out: a rank that never arrives ends the job).
Communicator& communicator(const std::vector<int>& devices);
// After an error: aborts the communicators so the next case starts afresh.
void abort_communicator();

// Blocks until `event` (or all work on `stream`) has completed, polling it and NCCL's asynchronous
// error on the cached communicators; see the top of this file for how it fails.
void wait_for_event(cudaEvent_t event);
void wait_for_stream(cudaStream_t stream);

// Runs `work`: a case's part whose collectives every rank joins (communicator, validation,
// timing). A ValidationError passes (every multi-rank validation is decided over all ranks:
// sum_over_ranks, agreed_validation); under MPI any other error ends the job, its line
// "xfbench: rank R of N (GPU G): <what>: <error>"; without MPI a LibraryError aborts the
// communicators, then every error passes to the case.
void collective_section(const std::string& what, const std::function<void()>& work);
// Runs `check`, a validation each rank makes of its own results, and makes its outcome every
// rank's: when it throws ValidationError on some rank, every rank throws the first failing
// rank's message ("rank R: ..."); else its result.
std::string agreed_validation(const std::function<std::string()>& check);

// The pieces, for tests. A poll answers done, pending or failed; poll_until calls it, and
// `clock.pause` between calls, until it is not pending or `timeout_s` have passed on
// `clock.now` (seconds) since the first call, and returns its last answer (pending: timed out).
enum class WaitStatus { done, pending, failed };
struct PollClock {
  std::function<double()> now;
  std::function<void()> pause;
};
PollClock steady_poll_clock();  // std::chrono::steady_clock; pauses ~0.1 ms
WaitStatus poll_until(const std::function<WaitStatus()>& poll, double timeout_s,
                      const PollClock& clock);
// "rank 1 of 2 (GPU 0)" under MPI, "GPUs 0,1 (one process)" otherwise.
std::string who_waits(bool mpi, int rank, int nranks, const std::vector<int>& devices);
// "timed out after 300 s waiting for <waiting_for> (--xfbench_nccl_timeout_s)".
std::string timeout_reason(double timeout_s, const std::string& waiting_for);

}  // namespace xfbench::kernels
