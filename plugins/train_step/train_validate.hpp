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
// "loss 10.41 (expected 10.53) -> 7.93 after 30 steps". Leaves the model trained: re-initialise it.
std::string validate_training(kernels::LanguageModel& model, cudaStream_t s);
// The same rules for any step (a data-parallel one: `last_loss` of one rank).
std::string validate_training(const std::function<void()>& step,
                              const std::function<float()>& last_loss, int vocab, int hidden);

}  // namespace xfbench::train
