// Checks a data-parallel step before it is timed: after kParallelSteps steps at the case's
// configuration (dropout off: N ranks draw other masks than one batch of N·b), every rank's fp32
// master weights (zero2: its shard) equal those of one GPU trained on the ranks' batches as one
// batch of N× the batch (or, where that does not fit, as N·accum accumulated micro-batches), its
// first step's gradient norm equals the reference's, and every rank holds the same weights.
//
// Tolerances: N ranks differ from one GPU by rounding: each rank's gradients are rounded to the
// storage type before the average, which is taken in it; AdamW's first steps are sign-like, so
// the few elements whose gradient is below that rounding move the other way. One GPU differs from
// itself where a kernel is not deterministic (cuDNN's SDPA backward at GPT-2 sizes): one rank is
// held to the same tolerance here (tests/train_step/test_parallel checks its bits where the
// kernels are deterministic). Relative L2 over a rank's master weights:
// kParallelWeightTolerance (fp16/bf16 storage) or kParallelWeightTolerance32 (tf32/fp32);
// first-step gradient norm: kParallelNormTolerance.
#pragma once

#include <string>
#include <vector>

#include "kernels/language_model_config.hpp"
#include "parallel_trainer.hpp"

namespace xfbench::train {

constexpr int kParallelSteps = 3;
// Measured on the H100: two micro-batches added in the storage type against one batch, 3 steps
// (test_parallel, RoundingGapTheToleranceCovers): 9.7e-5 (bf16), 1.9e-5 (fp16); gpt2-large s1024
// b4 bf16 on one rank against one GPU (cuDNN's nondeterministic backward): 2.3e-4 (dp), 1.8e-4
// (zero2); bert-large s128 b64: 0.
constexpr double kParallelWeightTolerance = 2e-3;
constexpr double kParallelWeightTolerance32 = 1e-4;
constexpr double kParallelNormTolerance = 1e-2;

// `config` with ranks = N. Builds the reference on the first of `devices`, frees it, then a
// trainer over `devices`. Returns "2 ranks == one GPU with 2x the batch after 3 steps: ...";
// throws ValidationError naming the first rank that differs (under MPI every process throws).
std::string validate_parallel(const kernels::TrainConfig& config, Parallelism mode,
                              const std::vector<int>& devices, std::size_t bucket_bytes);

}  // namespace xfbench::train
