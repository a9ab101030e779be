#include "train_case.hpp"

#include <cuda_runtime_api.h>

#include "train_validate.hpp"
#include "xfbench/xfbench.hpp"

namespace xfbench::train {
namespace {

struct Spec {
  kernels::TrainConfig c;
  bool search = true;
  std::string unsupported;  // set at registration when this build cannot run the configuration
};

// The dtype whose dense peak MFU is against (precisions and dtypes share their names).
Dtype dtype_of(kernels::Precision p) { return parse_dtype(kernels::to_string(p)); }

void run_case(benchmark::State& state, const Spec& spec) {
  if (!spec.unsupported.empty()) XF_THROW(Unsupported, spec.unsupported);
  const kernels::TrainConfig& c = spec.c;
  // The case's memory includes the GEMM plans' workspaces: earlier cases' plans go first.
  kernels::clear_gemm_plans();
  XF_CUDA_CHECK(cudaDeviceSynchronize());
  const std::size_t before = device_memory_used();
  Stream stream;
  kernels::LanguageModel model(c);  // Unsupported "out of memory: ..." before allocating
  model.init_parameters(c.seed);
  model.set_data(step_data(c));
  if (should_validate()) {
    add_label(state, "validated: " + validate_training(model, stream));
    model.init_parameters(c.seed);  // the timed steps start from the initialisation again
  }
  if (spec.search) model.tune();
  const Timing t = time_gpu(state, stream, [&](cudaStream_t s) { model.step(s); });
  const double samples = double(c.batch) * c.accum;
  Work work;
  work.flops = kernels::train_flops_per_sample(c) * samples;
  work.dtype = dtype_of(c.precision);
  work.samples = samples;
  work.tokens = samples * c.seq;
  set_counters(state, t, work);
  state.counters["MFU"] = state.counters["pct_peak"];
  state.counters["mem_GB"] = (double(device_memory_used()) - double(before)) / 1e9;
  state.counters["loss"] = model.loss(stream);
  if (c.precision == kernels::Precision::fp16)
    state.counters["skipped"] = model.scalars(stream).skipped;
}

}  // namespace

std::string case_name(const kernels::TrainConfig& c, const std::string& model_tag) {
  return "TrainStep/" + std::string(kernels::to_string(c.backend)) + "/" + c.model.name + "/" +
         kernels::to_string(c.precision) + "/seq:" + std::to_string(c.seq) +
         "/batch:" + std::to_string(c.batch) + "/accum:" + std::to_string(c.accum) +
         "/ckpt:" + (c.checkpointing ? "on" : "off") + "/adamw:" + kernels::to_string(c.optimizer) +
         model_tag;
}

std::vector<kernels::TokenBatch> step_data(const kernels::TrainConfig& c) {
  std::vector<kernels::TokenBatch> out;
  for (int k = 0; k < c.accum; ++k) out.push_back(kernels::synthetic_batch(c, c.seed + k));
  return out;
}

void add_train_case(const std::string& name, const kernels::TrainConfig& c, Suite suite,
                    bool search) {
  Spec spec{c, search, ""};
  try {
    kernels::check_train_config(c);  // InvalidArgument propagates
  } catch (const Unsupported& e) {
    spec.unsupported = e.message();
  }
  add_case(
      name, [spec](benchmark::State& s) { run_case(s, spec); }, Needs::gpu, suite);
}

std::size_t device_memory_used() {
  std::size_t free = 0, total = 0;
  XF_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  return total - free;
}

}  // namespace xfbench::train
