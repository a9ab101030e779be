// A training step over several GPUs with NCCL, the seeds' multi-GPU experiments on xfbench's own
// step: one LanguageModel per GPU (each on its own stream, all the same weights, each its own
// micro-batches), one process driving all GPUs of a node or one MPI rank per GPU
// (kernels/comm/nccl_comm.hpp).
//
//   dp     the backward of the last micro-batch records an event as each bucket of gradients is
//          final (parallel_plan.hpp); a communication stream per GPU waits for it and all-reduces
//          the bucket (average) while the backward goes on; then each GPU runs the same norm,
//          clipping and AdamW on the same gradients (LanguageModel::optimizer_step).
//   zero2  each bucket is reduce-scattered instead (average), in place: every rank gets its
//          chunk of every bucket where it lies in the flat gradients; the global norm adds the
//          ranks' partial sums of squares (an all-reduce of grad_norm_scratch); the fused (or
//          unfused) AdamW updates the rank's chunks of the fp32 master weights and moments (its
//          shard) and writes its chunks of the weights, which are all-gathered in place.
//   zero3  zero2 with each rank storing only its chunk of every layer's weights and gradients
//          (TrainConfig::shard_weights): the model gathers a layer's weights into a window
//          before its forward and its backward and reduce-scatters its gradients after its
//          backward, on the rank's communication stream (the next layer's gather and the last
//          layer's scatter overlap the compute); one bucket a layer; after AdamW only the
//          embeddings' and head's chunks are all-gathered (the layers' are gathered when used).
//   tp     Megatron-LM's tensor parallelism over all ranks (kernels::TrainConfig::tp_size): every
//          rank trains on the same batch with its shard of each block (heads, FFN columns), the
//          blocks all-reduce their row-parallel outputs in the forward and their column-parallel
//          input gradients in the backward, and each rank's AdamW updates its shard and the
//          parameters every rank holds whole (same gradients, same result). Not combined with dp.
//
// Each local rank's step is enqueued by its own host thread (kernels/comm/rank_threads.hpp). No
// host synchronisation inside a step: the ranks' streams start from an event on the caller's stream
// and the caller's stream waits for all of them.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernels/comm/rank_threads.hpp"
#include "kernels/models/language_model.hpp"
#include "parallel_plan.hpp"

namespace xfbench::train {

using kernels::OnDevice;  // the device guard of the comm floor

enum class Parallelism { dp, zero2, zero3, tp };
const char* to_string(Parallelism p);

// `c` over `gpus` ranks: dp, zero2 and zero3 set ranks, tp sets tp_size (the GPU count).
kernels::TrainConfig parallel_config(kernels::TrainConfig c, Parallelism mode, int gpus);

// DDP's default bucket (bucket_cap_mb = 25).
constexpr std::size_t kDefaultBucketBytes = std::size_t(25) << 20;

class ParallelTrainer {
 public:
  // One model per local device of `config` (parallel_config: its `ranks`, or tp's tp_size, must
  // be the communicator's size; zero2 sets shard_optimizer, zero3 also shard_weights and each
  // rank's collectives, tp each rank's tp_rank and tp_reduce), built with each device current,
  // on the communicator over `devices`.
  // Unsupported "out of memory ..." as LanguageModel when a rank's step cannot fit.
  ParallelTrainer(const kernels::TrainConfig& config, Parallelism mode,
                  const std::vector<int>& devices, std::size_t bucket_bytes = kDefaultBucketBytes);
  ~ParallelTrainer();
  ParallelTrainer(const ParallelTrainer&) = delete;
  ParallelTrainer& operator=(const ParallelTrainer&) = delete;

  Parallelism mode() const;
  int ranks() const;        // over all processes
  int local_ranks() const;  // models in this process
  int rank(int local) const;
  int device(int local) const;
  // The data-parallel rank whose batch local rank `local` trains on (kernels::step_data): its rank,
  // or 0 for tp (the ranks share one batch).
  int data_rank(int local) const;
  kernels::LanguageModel& model(int local);
  const BucketPlan& buckets() const;

  // Every rank the same weights (LanguageModel::init_parameters) and a fresh optimizer (zero2:
  // each rank's shard from the weights). Synchronises.
  void init_parameters(std::uint64_t seed);
  // The micro-batches local rank `local` trains on. Synchronises.
  void set_data(int local, const std::vector<kernels::TokenBatch>& micro_batches);
  void tune();  // each model's GEMM algorithms, on its device

  // One optimizer step on every rank, ordered after the work already on `stream` (a stream of
  // the first local device); `stream` then waits for every rank's step.
  void step(cudaStream_t stream);
  // Every rank's LanguageModel::compute_gradients, ordered as step (tp: the model's gradients,
  // each rank's shard; dp, zero2: each rank's own, not reduced).
  void compute_gradients(cudaStream_t stream);

  // One step with timing events on the first local rank: the gradient reduction's collectives
  // (sum of their times) and the part of it after the backward ended (not hidden); tp: the
  // blocks' all-reduces, on the compute stream, so none is hidden; zero3: the layers' gathers and
  // reduce-scatters too. Synchronises.
  struct Overlap {
    double comm_ms = 0, exposed_ms = 0;
    double hidden_pct() const;  // 100·(1 − exposed / comm), within [0, 100]
  };
  Overlap measure_overlap(cudaStream_t stream);

  // Local rank `local`'s fp32 master weights as (offset in the flat buffers, values) ranges: dp
  // and tp the whole buffer, zero2 its chunks. Synchronises.
  using MasterVisitor = std::function<void(std::size_t offset, const std::vector<float>& values)>;
  void visit_master(int local, const MasterVisitor& visit) const;
  // Local rank `local`'s weights in the storage type, raw bytes (every rank must hold the same;
  // zero3: of the parameters every rank stores whole).
  std::vector<unsigned char> weight_bytes(int local) const;

  struct Rank;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace xfbench::train
