// The multi-GPU TrainStep cases (parallel_trainer.hpp): the one-GPU case's name with the
// parallelism, the GPU count and NCCL's peer-to-peer setting appended,
//   TrainStep/fused/bert-large/bf16/seq:128/batch:64/accum:1/ckpt:off/adamw:fused/dp/gpus:2/p2p:on
// where `batch` is per GPU (tp:N: the batch the N GPUs share, N the GPU count). p2p:off is
// NCCL_P2P_DISABLE=1 (the seeds' "NVLink off"), which NCCL reads once per process, at the first
// communicator it creates (ncclGetUserP2pLevel caches it): a process measures one setting, the one
// its environment gives, and the other one's cases are skipped saying how to run them.
#pragma once

#include <string>
#include <vector>

#include "kernels/models/language_model_config.hpp"
#include "parallel_trainer.hpp"
#include "xfbench/case.hpp"

namespace xfbench::train {

struct ParallelOptions {
  std::vector<int> gpus;  // --xfbench_gpus (empty: the first N visible)
  std::size_t bucket_bytes = kDefaultBucketBytes;
  bool search = true;
};

std::string parallel_case_name(const kernels::TrainConfig& c, const std::string& model_tag,
                               Parallelism mode, int gpus, bool p2p);

// NCCL_P2P_DISABLE is set to 1 in this process's environment.
bool p2p_disabled_by_environment();

// Adds the case of `c` (per-GPU batch) over `gpus` ranks. When it runs: a process whose p2p
// setting is the other one skips it (how to run it in the reason); fewer GPUs than `gpus` skip it
// naming both; then validate_parallel, the trainer built, its training validated as the one-GPU
// case's (validate_training on the first rank's loss), re-initialised, tuned and timed. Counters:
// samples/s and tokens/s of all GPUs, TFLOPS, pct_peak and MFU per GPU, mem_GB (the most any GPU
// took), scaling (samples/s over gpus × the one-GPU case's, when that ran earlier in this
// process), comm_ms and comm_hidden_pct (ParallelTrainer::measure_overlap), loss (first rank).
void add_parallel_case(const kernels::TrainConfig& c, const std::string& model_tag,
                       Parallelism mode, int gpus, bool p2p, const ParallelOptions& options,
                       Suite suite);

// The multi-GPU flags, read at registration (MPI is started here when a launcher started us):
// --xfbench_train_parallel (dp, zero2, tp; `given` when set), --xfbench_gpus,
// --xfbench_train_bucket_mb. `ranks`: MPI's world, the GPUs given, or the visible ones (>= 1).
struct ParallelFlags {
  std::vector<Parallelism> modes;
  bool given = false;
  int ranks = 1;
  ParallelOptions options;
};
ParallelFlags parallel_flags(bool search);

// Every mode's case of `c` with p2p on and off: the one this process's environment can run in
// `suite` when there are two ranks or more, the others (and a one-rank baseline) extended.
void add_parallel_cases(const kernels::TrainConfig& c, const std::string& model_tag,
                        const ParallelFlags& flags, Suite suite);

}  // namespace xfbench::train
