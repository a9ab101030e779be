#include "train_validate.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "xfbench/error.hpp"

namespace xfbench::train {

std::vector<float> training_losses(kernels::LanguageModel& model, int steps, cudaStream_t s) {
  std::vector<float> losses;
  for (int i = 0; i < steps; ++i) {
    model.step(s);
    losses.push_back(model.loss(s));
  }
  return losses;
}

double initial_loss(int vocab, int hidden) {
  return std::log(double(vocab)) + hidden * double(kernels::kInitStd) * kernels::kInitStd / 2;
}

std::string validate_training(kernels::LanguageModel& model, cudaStream_t s,
                              std::vector<float>* losses) {
  const kernels::LmModel& m = model.config().model;
  return validate_training([&] { model.step(s); }, [&] { return model.loss(s); }, m.vocab, m.hidden,
                           losses);
}

std::vector<float> language_losses(kernels::LanguageModel& model, int steps, cudaStream_t s) {
  const kernels::TrainConfig& c = model.config();
  const float lr = c.adamw.lr;
  std::vector<float> losses;
  for (int i = 0; i < steps; ++i) {
    std::vector<kernels::TokenBatch> micro;
    for (int k = 0; k < c.accum; ++k)
      micro.push_back(kernels::language_batch(c, c.seed + std::uint64_t(i) * c.accum + k));
    model.set_data(micro);
    model.set_learning_rate(fp8_check_lr(lr, i));
    model.step(s);
    losses.push_back(model.loss(s));
  }
  model.set_learning_rate(lr);
  return losses;
}

float fp8_check_lr(float lr, int step) {
  return lr * float(std::min(step + 1, kFp8WarmupSteps)) / float(kFp8WarmupSteps);
}

double loss_after(const std::vector<float>& losses, int steps) {
  if (steps < kFp8LossWindow || steps > int(losses.size())) return std::nan("");
  std::vector<double> window(losses.begin() + (steps - kFp8LossWindow), losses.begin() + steps);
  for (double l : window)
    if (!std::isfinite(l)) return std::nan("");
  std::nth_element(window.begin(), window.begin() + kFp8LossWindow / 2, window.end());
  return window[kFp8LossWindow / 2];
}

std::string fp8_against_bf16(const std::vector<float>& fp8, const std::vector<float>& bf16,
                             const std::vector<float>& bf16_again) {
  std::string text, fails;
  const bool two = !bf16_again.empty();
  for (int n : kFp8Checkpoints) {
    const double a = loss_after(fp8, n), b = loss_after(bf16, n);
    const double b2 = two ? loss_after(bf16_again, n) : b;
    const double lo = std::min(b, b2), hi = std::max(b, b2);
    // Relative to the nearer end of bf16's range (0 inside it; NaN where one cannot compare).
    const double rel = !std::isfinite(a) || !std::isfinite(b) || !std::isfinite(b2) ? NAN
                       : a < lo                                                     ? a / lo - 1
                       : a > hi                                                     ? a / hi - 1
                                                                                    : 0.0;
    char ref[48], buf[160];
    if (two)
      std::snprintf(ref, sizeof ref, "%.4f/%.4f", b, b2);
    else
      std::snprintf(ref, sizeof ref, "%.4f", b);
    if (text.empty())
      std::snprintf(buf, sizeof buf, "fp8 loss after %d steps %.4f (bf16 %s, %+.2f%%)", n, a, ref,
                    100 * rel);
    else
      std::snprintf(buf, sizeof buf, ", after %d %.4f (%s, %+.2f%%)", n, a, ref, 100 * rel);
    text += buf;
    if (!(std::abs(rel) <= kFp8LossTolerance))
      fails += (fails.empty() ? "" : ", ") + std::to_string(n);
  }
  if (!fails.empty())
    XF_THROW(ValidationError, text + ": more than 1% from bf16's after " + fails + " steps");
  return text;
}

std::string validate_training(const std::function<void()>& step,
                              const std::function<float()>& last_loss, int vocab, int hidden,
                              std::vector<float>* losses) {
  std::vector<float> loss;
  for (int i = 0; i <= kFallSteps; ++i) {
    step();
    loss.push_back(last_loss());
  }
  const double expected = initial_loss(vocab, hidden);
  char buf[160];
  std::snprintf(buf, sizeof buf, "loss %.3f (expected %.3f) -> %.3f after %d steps", loss.front(),
                expected, loss.back(), kFallSteps);
  if (!std::isfinite(loss.front()) || std::abs(loss.front() / expected - 1) > kFirstLossTolerance)
    XF_THROW(ValidationError,
             std::string(buf) + ": the first loss is not within 5% of ln V + hidden·0.02²/2");
  if (!std::isfinite(loss.back()) || loss.back() > (1 - kMinFall) * loss.front())
    XF_THROW(ValidationError, std::string(buf) + ": the loss did not fall by 5% on one batch");
  if (losses) *losses = std::move(loss);
  return buf;
}

}  // namespace xfbench::train
