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
//
// tp: every rank trains on the one batch of the one-GPU step; its first step's loss, each of its
// gradient shards (against the same part of one GPU's gradient) and its master weights after
// kParallelSteps steps (dropout off) against one GPU's; the parameters every rank holds whole
// (embeddings, norms, row-parallel biases, the head) have the same gradient and weight bits on
// every rank. Tolerances: the ranks' partial products are rounded to the storage type before
// their sum (and summed in it), so every layer's output and input gradient differs from one GPU's
// by about a rounding of the storage type (bf16: 2^-9 relative), and these add up over the
// layers: the gradients differ by a few percent at 24-36 layers, and so AdamW's first, sign-like
// steps move the weights apart more than dp's single rounding of the gradients does. Relative L2:
// the loss (kTpLossTolerance), each parameter's gradient (kTpGradientTolerance; the worst one
// counts), all master weights after the steps (kTpWeightTolerance). A missing or doubled
// reduction, or a shard cut from the wrong part, is off by 0.5 or more.
//
// Every mode: where one GPU cannot hold the reference (llama-3.1-8b: 16 bytes a parameter is
// 128 GB), the check runs on the model's first kReducedLayers layers (the same widths, batch and
// sequence; the label says so): every layer is split, reduced and updated by the same code, so
// depth adds rounding, not another path.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "kernels/models/language_model_config.hpp"
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
// tp, measured on the H100 with two ranks on one GPU (test_tensor_parallel, TensorParallelModel,
// bf16, dropout off): bert-large s128 b16 loss 4.8e-5, worst gradient 3.0e-2 (position
// embeddings; all 1.8e-2), master weights after 3 steps 8.8e-4; gpt2-large s1024 b2 1.5e-5,
// 2.1e-2 (layer31.ln2_w), 6.2e-4; 2-layer toys (hidden 64) bf16 1.1e-2 and 1.7e-4, fp16 1.2e-3
// and 7e-5, fp32 4.4e-7 and 3e-8.
constexpr double kTpLossTolerance = 1e-3;
constexpr double kTpGradientTolerance = 1e-1;
constexpr double kTpGradientTolerance32 = 1e-4;
constexpr double kTpWeightTolerance = 5e-3;
constexpr double kTpWeightTolerance32 = kParallelWeightTolerance32;
constexpr int kReducedLayers = 2;

// `config` as parallel_config gives it for `mode` over N ranks. Builds the reference on the first
// of `devices`, frees it, then a trainer over `devices`. Returns "2 ranks == one GPU with 2x the
// batch after 3 steps: ..." (tp: "tp 2 == one GPU on the same batch: ..."); throws
// ValidationError naming the first rank that differs (under MPI every process throws).
std::string validate_parallel(const kernels::TrainConfig& config, Parallelism mode,
                              const std::vector<int>& devices, std::size_t bucket_bytes);

// tp's pieces (also for tests/train_step/test_tensor_parallel, which runs two ranks on one GPU).
// One GPU on the same batch (config without tensor parallelism, dropout as given), per parameter
// (whole tensors): the first step's loss and gradients, the master weights after kParallelSteps
// steps.
struct WholeModel {
  float loss = 0;
  std::map<std::string, std::vector<double>> grads, trained;
};
WholeModel whole_model(const kernels::TrainConfig& config, int device);
// A tensor-parallel rank's shards (gradients or master weights) against the whole model's same
// parts: the relative L2 error of the worst parameter (its name) and of all of them together.
struct ShardError {
  double worst = 0, all = 0;
  std::string tensor;
};
ShardError shard_error(const kernels::LanguageModel& m, kernels::LanguageModel::Values which,
                       const std::map<std::string, std::vector<double>>& whole);
// A hash of what every tensor-parallel rank holds whole (the flat buffer after the split
// parameters: LanguageModel::Flat::tp_split), of the gradients or of the weights.
double whole_part_hash(const kernels::LanguageModel& m, bool gradients);

}  // namespace xfbench::train
