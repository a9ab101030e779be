#include "block_case.hpp"

#include <cstdlib>

#include "block_init.hpp"
#include "block_validate.hpp"
#include "xfbench/xfbench.hpp"

namespace xfbench::block {
namespace {

struct Spec {
  BlockCase c;
  std::string unsupported;  // set at registration when the backend cannot take the configuration
};

void run_case(benchmark::State& state, const Spec& spec) {
  if (!spec.unsupported.empty()) XF_THROW(Unsupported, spec.unsupported);
  const BlockCase& bc = spec.c;
  if (should_validate())
    add_label(state, "validated: " + validate_block(bc.config, bc.part, bc.backward));
  Stream stream;
  kernels::TransformerBlock block(bc.config, bc.part);
  init_block(block, 42, stream);
  if (bc.search) block.tune(stream);
  const Timing t = time_gpu(state, stream, [&](cudaStream_t s) {
    block.forward(s);
    if (bc.backward) block.backward(s);
  });
  const kernels::BlockConfig& c = bc.config;
  Work work;
  work.flops = kernels::block_forward_flops(c, bc.part) * (bc.backward ? 3 : 1);
  work.dtype = c.precision == kernels::Precision::fp16 ? Dtype::fp16 : Dtype::bf16;
  work.samples = c.batch;
  work.tokens = c.tokens();
  set_counters(state, t, work);
  state.counters["mem_GB"] = block.device_bytes() / 1e9;
}

}  // namespace

void add_block_case(const std::string& name, const BlockCase& c) {
  Spec spec{c, ""};
  spec.c.config.backward = c.backward;
  try {
    kernels::check_block_config(spec.c.config, spec.c.part);  // InvalidArgument propagates
  } catch (const Unsupported& e) {
    spec.unsupported = e.message();
  }
  add_case(
      name, [spec](benchmark::State& s) { run_case(s, spec); }, Needs::gpu, c.suite);
}

bool flag_given(const char* flag) { return !flag_list(flag, "").empty(); }

std::vector<int> int_list_flag(const char* flag, const std::string& help,
                               std::vector<int> fallback) {
  std::vector<std::string> given = flag_list(flag, help);
  if (given.empty()) return fallback;
  std::vector<int> out;
  for (const std::string& g : given) {
    char* end = nullptr;
    long v = std::strtol(g.c_str(), &end, 10);
    if (g.empty() || *end != '\0' || v <= 0 || v > 1 << 20) {
      XF_THROW(InvalidArgument,
               std::string("--xfbench_") + flag + ": '" + g + "' is not a positive integer");
    }
    out.push_back(int(v));
  }
  return out;
}

std::vector<std::string> choice_list_flag(const char* flag, const std::string& help,
                                          std::vector<std::string> fallback,
                                          const std::vector<std::string>& allowed) {
  std::vector<std::string> given = flag_list(flag, help);
  if (given.empty()) return fallback;
  for (const std::string& g : given) {
    bool ok = false;
    for (const std::string& a : allowed) ok = ok || a == g;
    if (!ok)
      XF_THROW(InvalidArgument, std::string("--xfbench_") + flag + ": unknown value '" + g + "'");
  }
  return given;
}

kernels::AttentionBackend backend_of(const std::string& name) {
  if (name == "fused") return kernels::AttentionBackend::fused;
  if (name == "flash") return kernels::AttentionBackend::flash;
  return kernels::AttentionBackend::unfused;
}

kernels::Precision precision_of(const std::string& name) {
  return name == "fp16" ? kernels::Precision::fp16 : kernels::Precision::bf16;
}

}  // namespace xfbench::block
