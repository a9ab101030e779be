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

#include "kernels/models/language_model.hpp"

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

// FP8 training's accuracy: the bf16 and the fp8 step trained from the same initialisation on the
// same stream of language_batch()es (a synthetic language whose loss floor is 1.11 nats: one batch
// trained on repeatedly falls to ~0 within 30 steps, where a relative gap says nothing); the loss
// after each of kFp8Checkpoints steps (the median of the kFp8LossWindow steps ending there: each
// step sees another batch, and a loss spike on one step, whose timing moves between two bf16 runs
// of gpt2-medium, must not decide) within kFp8LossTolerance of bf16's.
constexpr int kFp8Checkpoints[] = {30, 200};
constexpr int kFp8LossWindow = 5;
constexpr double kFp8LossTolerance = 0.01;
// Both train with the learning rate warmed up linearly over the first kFp8WarmupSteps steps, as
// a real run starts: at the full rate from step 1, gpt2-medium's loss spikes (7.8 -> 12 -> 7.5,
// steps 13-26), and a spike one step later leaves a run one step behind, 2% of loss at step 30.
constexpr int kFp8WarmupSteps = 30;
// The learning rate of step `step` (0-based) of that schedule, `lr` the configured rate.
float fp8_check_lr(float lr, int step);

// The model's losses over `steps` steps, step k on language_batch()es drawn from (seed, k) at the
// learning rate fp8_check_lr(k); leaves those data set and the configured rate (set the timed
// data again after it). Synchronises after each step.
std::vector<float> language_losses(kernels::LanguageModel& model, int steps, cudaStream_t s);
// The loss after `steps` steps: the median of the kFp8LossWindow losses ending at step `steps`
// (NaN when there are fewer, or one is not finite).
double loss_after(const std::vector<float>& losses, int steps);
// Throws ValidationError naming the numbers when a checkpoint is more than 1% apart (or cannot
// compare), else returns "fp8 loss after 30 steps 6.212 (bf16 6.200, +0.19%), after 200 3.105
// (3.101, +0.13%)". With a second bf16 run on the same data and initialisation (`bf16_again`),
// "within 1%" is of the range the two span: bf16 is not bitwise reproducible (cuDNN's attention
// backward, atomics), and early in training two of its runs can differ by more than 1% themselves
// (gpt2-medium s1024 b8 after 30 steps: 6.96 and 7.63). The label then shows both.
std::string fp8_against_bf16(const std::vector<float>& fp8, const std::vector<float>& bf16,
                             const std::vector<float>& bf16_again = {});

}  // namespace xfbench::train
