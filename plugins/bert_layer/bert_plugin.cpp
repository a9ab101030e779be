// The BertLayer family: HF BertLayer of bert-large (hidden 1024, 16 heads, intermediate 4096,
// post-LN, erf GELU, dropout 0.1 active as in training), forward and forward+backward, with the
// unfused (eager), fused (cuDNN flash attention) and flash (xfbench's own flash attention
// kernels) backends, and the seeds' parts of the layer.
#include <string>
#include <vector>

#include "bert_init.hpp"
#include "bert_validate.hpp"
#include "kernels/bert_layer.hpp"
#include "xfbench/xfbench.hpp"

namespace xfbench::bert {
namespace {

using kernels::AttentionBackend;
using kernels::BertConfig;
using kernels::BertLayer;
using kernels::BertPart;

struct Spec {
  BertConfig config;
  BertPart part;
  bool backward;
  std::string unsupported;  // set at registration when the backend cannot take the configuration
  bool search = true;       // time cuBLASLt's top algorithms for each GEMM first
};

void run_case(benchmark::State& state, const Spec& spec) {
  if (!spec.unsupported.empty()) XF_THROW(Unsupported, spec.unsupported);
  if (should_validate())
    state.SetLabel("validated: " + validate_bert(spec.config, spec.part, spec.backward));
  Stream stream;
  BertLayer layer(spec.config, spec.part);
  init_layer(layer, 42, stream);
  if (spec.search) layer.tune(stream);
  const Timing t = time_gpu(state, stream, [&](cudaStream_t s) {
    layer.forward(s);
    if (spec.backward) layer.backward(s);
  });
  const BertConfig& c = spec.config;
  Work work;
  work.flops = kernels::bert_forward_flops(c, spec.part) * (spec.backward ? 3 : 1);
  work.dtype = c.precision == kernels::Precision::fp16 ? Dtype::fp16 : Dtype::bf16;
  work.samples = c.batch;
  work.tokens = c.tokens();
  set_counters(state, t, work);
  state.counters["mem_GB"] = layer.device_bytes() / 1e9;
}

std::vector<int> int_list(const char* flag, const std::string& help, std::vector<int> fallback) {
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

std::vector<std::string> names(const char* flag, const std::string& help,
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

AttentionBackend backend_of(const std::string& name) {
  if (name == "fused") return AttentionBackend::fused;
  if (name == "flash") return AttentionBackend::flash;
  return AttentionBackend::unfused;
}

void add(const Spec& base, const std::string& name) {
  Spec spec = base;
  try {
    kernels::check_bert_config(spec.config);  // InvalidArgument propagates: the host exits 2
  } catch (const Unsupported& e) {
    spec.unsupported = e.message();
  }
  add_case(name, [spec](benchmark::State& s) { run_case(s, spec); });
}

void register_cases() {
  BertConfig model;
  model.hidden = int(flag_int("bert_hidden", 1024, "BertLayer hidden size (bert-large: 1024)"));
  model.heads = int(flag_int("bert_heads", 16, "BertLayer attention heads (bert-large: 16)"));
  model.intermediate =
      int(flag_int("bert_intermediate", 4096, "BertLayer FFN size (bert-large: 4096)"));
  model.dropout =
      float(flag_int("bert_dropout_pct", 10, "BertLayer dropout in percent (training mode: 10)")) /
      100.f;
  const std::vector<int> seqs =
      int_list("bert_seqs", "BertLayer sequence lengths (default 128,512)", {128, 512});
  const std::vector<int> batches =
      int_list("bert_batches", "BertLayer batch sizes (default 2,4,8,16,32,64,128)",
               {2, 4, 8, 16, 32, 64, 128});
  const std::vector<std::string> dtypes = names(
      "bert_dtypes", "BertLayer dtypes (default fp16,bf16)", {"fp16", "bf16"}, {"fp16", "bf16"});
  const std::vector<std::string> backends =
      names("bert_backends", "BertLayer attention backends (default unfused,fused,flash)",
            {"unfused", "fused", "flash"}, {"unfused", "fused", "flash"});
  const bool search =
      flag_bool("bert_search", true, "BertLayer: search cuBLASLt algorithms per GEMM first");
  const bool default_model =
      model.hidden == 1024 && model.heads == 16 && model.intermediate == 4096;
  const std::string model_tag = default_model ? ""
                                              : "/hidden:" + std::to_string(model.hidden) +
                                                    "/heads:" + std::to_string(model.heads) +
                                                    "/inter:" + std::to_string(model.intermediate);
  kernels::check_bert_config([&] {  // model dimensions alone, before any case exists
    BertConfig c = model;
    c.backend = AttentionBackend::unfused;
    return c;
  }());

  for (const std::string& d : dtypes) {
    const auto precision = d == "fp16" ? kernels::Precision::fp16 : kernels::Precision::bf16;
    for (const std::string& be : backends) {
      for (const char* pass : {"fwd", "fwdbwd"}) {
        for (int seq : seqs) {
          for (int batch : batches) {
            Spec s{model, BertPart::layer, std::string(pass) == "fwdbwd", "", search};
            s.config.precision = precision;
            s.config.backend = backend_of(be);
            s.config.seq = seq, s.config.batch = batch;
            s.config.backward = s.backward;
            add(s, "BertLayer/" + be + "/" + d + "/" + pass + "/seq:" + std::to_string(seq) +
                       "/batch:" + std::to_string(batch) + model_tag);
          }
        }
      }
    }
    // The seeds' parts table: batch 64, seq 128, forward; attention with each backend.
    for (BertPart part :
         {BertPart::dense, BertPart::dense_gelu, BertPart::ffn, BertPart::attention}) {
      for (const std::string& be : backends) {
        if (part != BertPart::attention && be != backends.front()) continue;
        Spec s{model, part, false, "", search};
        s.config.precision = precision;
        s.config.backend = backend_of(be);
        s.config.seq = 128, s.config.batch = 64;
        s.config.backward = false;
        std::string p = kernels::to_string(part);
        if (part == BertPart::attention && be != "unfused") p = "attention_" + be;
        add(s, "BertLayer/part:" + p + "/" + d + "/fwd/seq:128/batch:64" + model_tag);
      }
    }
  }
}

}  // namespace
}  // namespace xfbench::bert

XFBENCH_PLUGIN("bert_layer", "1.0.0",
               "HF BertLayer (bert-large) forward and backward: unfused, cuDNN fused and xfbench "
               "flash attention, and its parts",
               xfbench::bert::register_cases)
