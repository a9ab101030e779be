#include "block_case.hpp"

#include <cmath>
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
  mark_phase("validate");
  Stream stream;
  kernels::TransformerBlock block(bc.config, bc.part);
  init_block(block, 42, stream);
  mark_phase("build");
  if (bc.search) block.tune(stream);
  if (!block.ffn_products().empty()) add_label(state, block.ffn_products());
  mark_phase("tune");
  const Timing t = time_gpu(state, stream, [&](cudaStream_t s) {
    block.forward(s);
    if (bc.backward) block.backward(s);
  });
  const kernels::BlockConfig& c = bc.config;
  Work work;
  work.flops = kernels::block_forward_flops(c, bc.part) * (bc.backward ? 3 : 1);
  // pct_peak of the dtype's dense peak: fp8's (twice bf16's) for FP8 linears.
  work.dtype = c.precision == kernels::Precision::fp16  ? Dtype::fp16
               : c.precision == kernels::Precision::fp8 ? Dtype::fp8
                                                        : Dtype::bf16;
  work.samples = c.batch;
  work.tokens = c.tokens();
  set_counters(state, t, work);
  if (c.causal && (bc.part == kernels::BlockPart::layer ||
                   bc.part == kernels::BlockPart::attention))  // the time over what the mask leaves
    state.counters["TFLOPS_causal"] = double(state.counters["TFLOPS"]) *
                                      kernels::block_forward_flops(c, bc.part, true) /
                                      kernels::block_forward_flops(c, bc.part);
  state.counters["mem_GB"] = block.device_bytes() / 1e9;
}

std::string joined(const std::vector<int>& v) {
  std::string out;
  for (int x : v) out += (out.empty() ? "" : ",") + std::to_string(x);
  return out;
}

}  // namespace

std::vector<int> int_list_flag(const std::string& flag, const std::string& help,
                               std::vector<int> fallback) {
  std::vector<long> given = flag_int_list(flag, help, {}, {1, 1 << 20, ""});
  if (given.empty()) return fallback;
  return std::vector<int>(given.begin(), given.end());
}

std::vector<std::string> choice_list_flag(const std::string& flag, const std::string& help,
                                          std::vector<std::string> fallback,
                                          const std::vector<std::string>& allowed) {
  return flag_choice_list(flag, help, std::move(fallback), allowed);
}

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

namespace {
// One of `allowed` (the first is the default), else InvalidArgument: "--xfbench_<flag>='v':
// expected a, b or c".
std::string choice_flag(const std::string& flag, const std::vector<std::string>& allowed,
                        const std::string& help) {
  const std::string v = flag_string(flag, allowed.front(), help);
  for (const std::string& a : allowed)
    if (v == a) return v;
  std::string expected;
  for (std::size_t i = 0; i < allowed.size(); ++i)
    expected += (i == 0 ? "" : i + 1 == allowed.size() ? " or " : ", ") + allowed[i];
  XF_THROW(InvalidArgument, "--xfbench_" + flag + "='" + v + "': expected " + expected);
}
}  // namespace

LayerSweep layer_sweep_flags(const std::string& prefix, const std::string& family,
                             const std::vector<int>& seqs, const std::vector<int>& batches,
                             bool fp8, bool fusable_ffn) {
  LayerSweep s;
  s.seqs = int_list_flag(prefix + "_seqs",
                         family + " sequence lengths (default " + joined(seqs) + ")", seqs);
  s.batches = int_list_flag(prefix + "_batches",
                            family + " batch sizes (default " + joined(batches) + ")", batches);
  std::vector<std::string> allowed = {"fp16", "bf16"};
  if (fp8) allowed.push_back("fp8");
  s.dtypes = choice_list_flag(
      prefix + "_dtypes",
      family + " dtypes (default fp16,bf16" +
          (fp8 ? std::string("; fp8: FP8 linear layers, the rest bf16") : "") + ")",
      {"fp16", "bf16"}, allowed);
  if (fp8)
    s.fp8.recipe = kernels::fp8_recipe(choice_flag(
        prefix + "_fp8_recipe", {"delayed", "current"},
        family + " fp8 scaling: delayed (amax history of 1024 steps, TransformerEngine's "
                 "default) or current (this step's amax)"));
  s.backends = choice_list_flag(prefix + "_backends",
                                family + " attention backends (default unfused,fused,flash)",
                                {"unfused", "fused", "flash"}, {"unfused", "fused", "flash"});
  s.search =
      flag_bool(prefix + "_search", true, family + ": search cuBLASLt algorithms per GEMM first");
  if (fusable_ffn) {
    const std::string v = choice_flag(
        prefix + "_ffn_products", {"search", "unfused", "fused"},
        family +
            ": the FFN's up projection with its activation (and their backward) as search (time "
            "the cuBLASLt product + our activation kernel against a CUTLASS product with the "
            "activation in its epilogue, keep the faster; the label says which), unfused or "
            "fused (Hopper, fp16/bf16)");
    s.ffn_products = v == "unfused" ? kernels::FfnProducts::unfused
                     : v == "fused" ? kernels::FfnProducts::fused
                                    : kernels::FfnProducts::search;
  }
  for (const char* dim : {"_seqs", "_batches", "_dtypes"}) {
    s.given = s.given || !flag_list(prefix + dim, "").empty();
  }
  return s;
}

void add_layer_cases(
    const std::string& family, const kernels::BlockConfig& model, const LayerSweep& sweep,
    const std::string& model_tag,
    const std::function<bool(int seq, int batch, const std::string& backend)>& headline) {
  Axes axes;
  axes.add("dtype", sweep.dtypes)
      .add("backend", sweep.backends)
      .add("pass", std::vector<std::string>{"fwd", "fwdbwd"})
      .add("seq", sweep.seqs)
      .add("batch", sweep.batches);
  axes.for_each([&](const AxisPoint& p) {
    const std::string &d = p["dtype"], &be = p["backend"], &pass = p["pass"];
    const int seq = p.integer("seq"), batch = p.integer("batch");
    const bool core = sweep.given || (d == sweep.headline_dtype && headline(seq, batch, be) &&
                                      in_default_suite(be, pass));
    BlockCase s{model, kernels::BlockPart::layer, pass == "fwdbwd", sweep.search,
                core ? Suite::core : Suite::extended};
    s.config.precision = precision_of(d);
    s.config.fp8 = sweep.fp8;
    s.config.ffn_products = sweep.ffn_products;
    s.config.backend = backend_of(be);
    s.config.seq = seq, s.config.batch = batch;
    CaseName name(family);
    name.add(be);
    add_dtype(name, d, sweep).add(pass).add("seq", seq).add("batch", batch).add_segments(model_tag);
    add_block_case(name.str(), s);
  });
}

void add_part_cases(const std::string& family, const kernels::BlockConfig& model,
                    const LayerSweep& sweep, const std::string& model_tag, int seq, int batch,
                    const std::vector<std::pair<kernels::BlockPart, std::string>>& parts) {
  // The sweep's seqs and batches when given by flag, else the headline shape.
  std::vector<std::string> part_names;
  for (const auto& pn : parts) part_names.push_back(pn.second);
  Axes axes;
  axes.add("dtype", sweep.dtypes)
      .add("part", part_names)
      .add("backend", sweep.backends)
      .add("seq", sweep.given ? sweep.seqs : std::vector<int>{seq})
      .add("batch", sweep.given ? sweep.batches : std::vector<int>{batch});
  axes.for_each([&](const AxisPoint& p) {
    const std::string &d = p["dtype"], &name = p["part"], &be = p["backend"];
    kernels::BlockPart part = parts.front().first;
    for (const auto& pn : parts)
      if (pn.second == name) part = pn.first;
    const bool attention = part == kernels::BlockPart::attention;
    if (!attention && be != sweep.backends.front()) return;  // no attention: one backend
    BlockCase s{model, part, false, sweep.search, sweep.given ? Suite::core : Suite::extended};
    s.config.precision = precision_of(d);
    s.config.fp8 = sweep.fp8;
    s.config.ffn_products = sweep.ffn_products;
    s.config.backend = backend_of(be);
    s.config.seq = p.integer("seq"), s.config.batch = p.integer("batch");
    CaseName n(family);
    n.add("part", attention && be != "unfused" ? name + "_" + be : name);
    add_dtype(n, d, sweep)
        .add("fwd")
        .add("seq", s.config.seq)
        .add("batch", s.config.batch)
        .add_segments(model_tag);
    add_block_case(n.str(), s);
  });
}

bool in_default_suite(const std::string& backend, const std::string& pass) {
  return backend == "fused" || (backend == "flash" && pass == "fwdbwd");
}

float dropout_flag(const std::string& prefix, const std::string& family) {
  return float(flag_int(prefix + "_dropout_pct", 10,
                        family + " dropout in percent (HF's training mode: 10; another rate adds "
                                 "/dropout:<percent> to the names)",
                        {0, 99, "percent"})) /
         100.f;
}

std::string dropout_tag(float p) {
  const long pct = std::lround(p * 100.f);
  return pct == 10 ? "" : "/dropout:" + std::to_string(pct);
}

kernels::AttentionBackend backend_of(const std::string& name) {
  if (name == "fused") return kernels::AttentionBackend::fused;
  if (name == "flash") return kernels::AttentionBackend::flash;
  return kernels::AttentionBackend::unfused;
}

kernels::Precision precision_of(const std::string& name) {
  return kernels::precision_of(parse_dtype(name));
}

CaseName& add_dtype(CaseName& name, const std::string& dtype, const LayerSweep& sweep) {
  name.add(dtype);
  return dtype == "fp8" ? name.add("recipe", kernels::to_string(sweep.fp8.recipe)) : name;
}

}  // namespace xfbench::block
