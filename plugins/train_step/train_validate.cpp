#include "train_validate.hpp"

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

std::string validate_training(kernels::LanguageModel& model, cudaStream_t s) {
  const kernels::LmModel& m = model.config().model;
  return validate_training([&] { model.step(s); }, [&] { return model.loss(s); }, m.vocab,
                           m.hidden);
}

std::string validate_training(const std::function<void()>& step,
                              const std::function<float()>& last_loss, int vocab, int hidden) {
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
  return buf;
}

}  // namespace xfbench::train
