// Checks a training step before it is timed: the first step's loss is near what a model at its
// random initialisation gives (ln V + hidden·0.02²/2: about uniform, widened by the logits' spread,
// which matters for Llama's wide tied embeddings: 3B's first loss is 12.37, ln V 11.76), and the
// loss falls when the same batch is trained on repeatedly (the step really learns: gradients,
// clipping and AdamW work together).
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <string>
#include <vector>

#include "kernels/language_model.hpp"

namespace xfbench::train {

constexpr int kFallSteps = 30;
constexpr double kFirstLossTolerance = 0.05;  // |loss_0 / initial_loss(vocab, hidden) - 1|
constexpr double kMinFall = 0.05;             // loss_30 <= (1 - kMinFall) · loss_0

// The first loss expected at the initialisation: ln(vocab) + hidden·kInitStd²/2.
double initial_loss(int vocab, int hidden);

// The losses of kFallSteps + 1 steps on the model's data (synchronises after each step).
std::vector<float> training_losses(kernels::LanguageModel& model, int steps, cudaStream_t s);

// Runs the steps and checks both rules; throws ValidationError naming the numbers, else returns
// "loss 10.41 (expected 10.53) -> 7.93 after 30 steps" (and the losses, when asked). Leaves the
// model trained: re-initialise it.
std::string validate_training(kernels::LanguageModel& model, cudaStream_t s,
                              std::vector<float>* losses = nullptr);
// The same rules for any step (a data-parallel one: `last_loss` of one rank).
std::string validate_training(const std::function<void()>& step,
                              const std::function<float()>& last_loss, int vocab, int hidden,
                              std::vector<float>* losses = nullptr);

// FP8 training's accuracy: the mean loss over the validation's steps (the area under the curve:
// one batch trained on repeatedly falls to ~0, so the last loss alone says little) within
// kFp8LossTolerance of the bf16 step's on the same data and initialisation. Throws
// ValidationError naming both, else returns "fp8 mean loss 3.214 over 31 steps, bf16 3.205
// (+0.28%); last 0.012 / 0.011".
constexpr double kFp8LossTolerance = 0.01;
std::string fp8_against_bf16(const std::vector<float>& fp8, const std::vector<float>& bf16);
// mean(fp8) / mean(bf16) - 1 (NaN where they cannot compare: lengths differ, none, not finite).
double fp8_mean_loss_gap(const std::vector<float>& fp8, const std::vector<float>& bf16);

}  // namespace xfbench::train
