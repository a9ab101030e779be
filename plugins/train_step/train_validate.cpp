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

std::string validate_training(kernels::LanguageModel& model, cudaStream_t s,
                              std::vector<float>* losses) {
  const kernels::LmModel& m = model.config().model;
  return validate_training([&] { model.step(s); }, [&] { return model.loss(s); }, m.vocab, m.hidden,
                           losses);
}

namespace {
double mean(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += x;
  return s / double(v.size());
}
}  // namespace

double fp8_mean_loss_gap(const std::vector<float>& fp8, const std::vector<float>& bf16) {
  if (fp8.empty() || fp8.size() != bf16.size()) return std::nan("");
  const double rel = mean(fp8) / mean(bf16) - 1;
  return std::isfinite(rel) ? rel : std::nan("");
}

std::string fp8_against_bf16(const std::vector<float>& fp8, const std::vector<float>& bf16) {
  if (fp8.empty() || fp8.size() != bf16.size())
    XF_THROW(ValidationError, "fp8 against bf16: " + std::to_string(fp8.size()) + " and " +
                                  std::to_string(bf16.size()) + " losses");
  const double a = mean(fp8), b = mean(bf16), rel = fp8_mean_loss_gap(fp8, bf16);
  char buf[200];
  std::snprintf(buf, sizeof buf,
                "fp8 mean loss %.4f over %zu steps, bf16 %.4f (%+.2f%%); last %.4f / %.4f", a,
                fp8.size(), b, 100 * rel, fp8.back(), bf16.back());
  if (!std::isfinite(rel) || std::abs(rel) > kFp8LossTolerance)
    XF_THROW(ValidationError, std::string(buf) + ": more than 1% apart");
  return buf;
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
