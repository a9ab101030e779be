#include "train_case.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <map>

#include "block_case.hpp"  // dropout_tag
#include "step_parts.hpp"
#include "train_validate.hpp"
#include "xfbench/xfbench.hpp"

namespace xfbench::train {
namespace {

struct Spec {
  kernels::TrainConfig c;
  bool search = true;
  std::string unsupported;  // set at registration when this build cannot run the configuration
  std::string name;
  bool graph = false;  // each timed step one CUDA graph replay
};

// samples/s of the cases that ran in this process, by name.
std::map<std::string, double>& samples_per_second() {
  static std::map<std::string, double> m;
  return m;
}

// The steps of the FP8 accuracy check (train_validate.hpp): to its last checkpoint.
constexpr int kFp8Steps = *std::max_element(std::begin(kFp8Checkpoints), std::end(kFp8Checkpoints));

// The bf16 step's losses on the FP8 check's language stream, from the same initialisation (a
// model of its own, freed before the caller's timing).
std::vector<float> bf16_losses(kernels::TrainConfig c, cudaStream_t stream) {
  c.precision = kernels::Precision::bf16;
  kernels::LanguageModel bf16(c);
  bf16.init_parameters(c.seed);
  return language_losses(bf16, kFp8Steps, stream);
}

// With XFBENCH_LOSSES=1, the FP8 check's loss curves on stderr, one line each ("losses <case>
// bf16: 10.98 10.91 ..."): where the two precisions part, which the label's two checkpoints hide.
void print_losses(const std::string& name, const char* which, const std::vector<float>& losses) {
  const char* v = std::getenv("XFBENCH_LOSSES");
  if (!v || std::string(v) != "1") return;
  std::string line = "losses " + name + " " + which + ":";
  char buf[32];
  for (float l : losses) std::snprintf(buf, sizeof buf, " %.4f", l), line += buf;
  std::fprintf(stderr, "%s\n", line.c_str());
}

// Each case's validation once per process, its label or "!" + its failure: the repetitions of a
// case share it (an FP8 case's check trains three models for 200 steps; and a check that passed in
// one repetition and failed in another would give one case two verdicts).
std::map<std::string, std::string>& validations() {
  static std::map<std::string, std::string> done;
  return done;
}

void run_case(benchmark::State& state, const Spec& spec) {
  if (!spec.unsupported.empty()) XF_THROW(Unsupported, spec.unsupported);
  const kernels::TrainConfig& c = spec.c;
  Stream stream;
  const auto known = validations().find(spec.name);
  if (should_validate() && known != validations().end()) {
    if (known->second.rfind('!', 0) == 0) XF_THROW(ValidationError, known->second.substr(1));
    add_label(state, known->second);
  }
  const bool validate = should_validate() && known == validations().end();
  // fp8's accuracy is judged against the bf16 step on the same data and initialisation, trained
  // first, twice (its own run-to-run spread: train_validate.hpp), each model gone before the next
  // is built (two may not fit together).
  const bool against_bf16 = validate && c.precision == kernels::Precision::fp8;
  const std::vector<float> bf16 = against_bf16 ? bf16_losses(c, stream) : std::vector<float>{};
  const std::vector<float> bf16_again =
      against_bf16 ? bf16_losses(c, stream) : std::vector<float>{};
  mark_phase("bf16 losses");
  // The case's memory includes the GEMM plans' workspaces: earlier cases' plans go first.
  kernels::clear_gemm_plans();
  XF_CUDA_CHECK(cudaDeviceSynchronize());
  const std::size_t before = device_memory_used();
  kernels::LanguageModel model(c);  // Unsupported "out of memory: ..." before allocating
  model.init_parameters(c.seed);
  model.set_data(kernels::step_data(c));
  mark_phase("build");
  if (validate) {
    std::string label;
    try {
      label = "validated: " + validate_training(model, stream);
      if (against_bf16) {
        model.init_parameters(c.seed);
        const std::vector<float> fp8 = language_losses(model, kFp8Steps, stream);
        print_losses(spec.name, "bf16", bf16);
        print_losses(spec.name, "bf16_again", bf16_again);
        print_losses(spec.name, "fp8", fp8);
        label += "; " + fp8_against_bf16(fp8, bf16, bf16_again);
        model.set_data(kernels::step_data(c));
      }
    } catch (const ValidationError& e) {
      validations()[spec.name] = "!" + e.message();
      throw;
    }
    validations()[spec.name] = label;
    add_label(state, label);
    model.init_parameters(c.seed);  // the timed steps start from the initialisation again
    mark_phase("validate");
  }
  if (spec.search) model.tune();
  if (!model.ffn_products().empty()) add_label(state, model.ffn_products());
  mark_phase("tune");
  TimerOptions timer;
  timer.graph_each_launch = spec.graph;
  const Timing t = time_gpu(
      state, stream, [&](cudaStream_t s) { model.step(s); }, timer);
  if (spec.graph)
    add_label(state, t.graph ? "each step one CUDA graph"
                             : "the step could not be captured in a CUDA graph: launched as it is");
  set_train_counters(state, t, c, 1);
  samples_per_second()[spec.name] = state.counters["samples/s"];
  state.counters["mem_GB"] = (double(device_memory_used()) - double(before)) / 1e9;
  state.counters["loss"] = model.loss(stream);
  if (c.precision == kernels::Precision::fp16)
    state.counters["skipped"] = model.scalars(stream).skipped;
  print_step_parts(spec.name, model, stream);  // XFBENCH_STEP_PARTS=1: after the numbers
}

}  // namespace

void set_train_counters(benchmark::State& state, const Timing& t, const kernels::TrainConfig& c,
                        int ranks) {
  const double samples = double(c.batch) * c.accum;  // per GPU, or per tensor-parallel group
  Work work;
  work.flops = kernels::train_flops_per_sample(c) * samples / c.tp_size;
  work.dtype = kernels::dtype_of(c.precision);  // the dense peak MFU is against
  work.samples = samples * ranks / c.tp_size;
  work.tokens = samples * ranks / c.tp_size * c.seq;
  set_counters(state, t, work);
  state.counters["MFU"] = state.counters["pct_peak"];
}

double recorded_samples_per_second(const std::string& name) {
  auto it = samples_per_second().find(name);
  return it == samples_per_second().end() ? 0 : it->second;
}

std::string case_name(const kernels::TrainConfig& c, const std::string& model_tag) {
  CaseName n("TrainStep");
  n.add(kernels::to_string(c.backend)).add(c.model.name).add(kernels::to_string(c.precision));
  if (c.precision == kernels::Precision::fp8) n.add("recipe", kernels::to_string(c.fp8.recipe));
  n.add("seq", c.seq)
      .add("batch", c.batch)
      .add("accum", c.accum)
      .add("ckpt", c.checkpointing ? "on" : "off")
      .add("adamw", kernels::to_string(c.optimizer));
  if (!c.model.llama) n.add_segments(block::dropout_tag(c.dropout));
  return n.add_segments(model_tag).str();
}

void add_train_case(const std::string& name, const kernels::TrainConfig& c, Suite suite,
                    bool search, bool graph) {
  Spec spec{c, search, "", name, graph};
  try {
    kernels::check_train_config(c);  // InvalidArgument propagates
  } catch (const Unsupported& e) {
    spec.unsupported = e.message();
  }
  if (graph && c.dropout > 0.f && spec.unsupported.empty())
    spec.unsupported =
        "a CUDA graph of the step replays the dropout masks it captured: graph:on "
        "takes --xfbench_train_dropout_pct=0";
  add_case(
      name, [spec](benchmark::State& s) { run_case(s, spec); }, Needs::gpu, suite);
}

std::size_t device_memory_used() {
  std::size_t free = 0, total = 0;
  XF_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  return total - free;
}

}  // namespace xfbench::train
