#include "block_validate.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "block_init.hpp"
#include "kernels/models/reference/transformer_block_ref.hpp"
#include "xfbench/xfbench.hpp"

namespace xfbench::block {

using kernels::BlockConfig;
using kernels::BlockPart;
using kernels::TransformerBlock;

std::vector<double> download(const TransformerBlock& block, const std::string& name, Dtype t,
                             cudaStream_t s) {
  return download_as_double(block.tensor(name), block.elements(name), element_of(t), s);
}

namespace {

// What a configuration's validation depends on besides the backend and the run's batch and seq.
std::string model_key(const BlockConfig& c) {
  return c.name + "/" + std::to_string(c.hidden) + "/" + std::to_string(c.heads) + "/" +
         std::to_string(c.intermediate) + "/" + kernels::to_string(c.placement) + "/" +
         std::to_string(int(c.activation)) + "/" + std::to_string(c.causal) + "/" +
         std::to_string(c.eps) + "/" + kernels::to_string(c.precision) + "/" +
         std::to_string(c.head_dim()) + (c.gated_ffn ? "/gated" : "") + "/kv" +
         std::to_string(c.kv_head_count()) +
         (c.rotary ? "/rope" + std::to_string(c.rope.theta) + "x" + std::to_string(c.rope.factor)
                   : "") +
         (c.precision == kernels::Precision::fp8
              ? std::string("/") + kernels::to_string(c.fp8.recipe)
              : "");
}

// Validation runs at a fixed small batch and sequence: one per model, precision, backend, part.
std::string key_of(const BlockConfig& c, BlockPart part, bool backward) {
  return model_key(c) + "/" + kernels::to_string(c.backend) + "/" + kernels::to_string(part) +
         (backward ? "/bwd" : "/fwd");
}

// The float64 reference is the slow part (seconds at gpt2-xl's widths), and backends that validate
// at the same seq see the same inputs: the last results are kept and reused for equal inputs.
kernels::ref::Tensors reference(const BlockConfig& c, BlockPart part, bool backward,
                                const kernels::ref::Tensors& in) {
  struct Entry {
    std::string key;
    kernels::ref::Tensors in, out;
  };
  static std::mutex mu;
  static std::vector<Entry> cache;  // a handful per process: one per model, dtype, seq, pass
  const std::string key = model_key(c) + "/" + std::to_string(c.batch) + "x" +
                          std::to_string(c.seq) + "/" + kernels::to_string(part) +
                          (backward ? "/bwd" : "/fwd");
  // A forward's reference is in the backward's of the same inputs (which have dout besides).
  const std::string bwd_key = key.substr(0, key.size() - 4) + "/bwd";
  auto has_inputs = [&](const kernels::ref::Tensors& all) {
    for (const auto& [name, values] : in) {
      auto it = all.find(name);
      if (it == all.end() || it->second != values) return false;
    }
    return true;
  };
  std::lock_guard<std::mutex> lock(mu);
  for (const Entry& e : cache) {
    if (e.key == key && e.in == in) return e.out;
    if (!backward && e.key == bwd_key && has_inputs(e.in)) return e.out;
  }
  if (cache.size() >= 8) cache.erase(cache.begin());
  cache.push_back({key, in, {}});
  kernels::ref::transformer_block(c, part, in, backward, cache.back().out);
  return cache.back().out;
}

std::string run_validation(const BlockConfig& full, BlockPart part, bool backward, bool small,
                           kernels::FfnProducts products) {
  BlockConfig c = full;
  c.ffn_products = products;
  if (small) {
    c.batch = 2;                                                      // small, deterministic
    c.seq = c.backend == kernels::AttentionBackend::flash ? 64 : 32;  // flash takes seq % 64 == 0
  }
  c.set_dropout(0.f);
  c.backward = backward;
  const Dtype t = storage_dtype(c.precision);
  Stream stream;
  TransformerBlock block(c, part);
  init_block(block, 1234, stream);
  // fp8: the step after a first one, whose amaxes are then the delayed recipe's history (the
  // scales as they hold in training); the same inputs, so the same reference.
  for (int i = c.precision == kernels::Precision::fp8 ? 2 : 1; i > 0; --i) {
    block.forward(stream);
    if (backward) block.backward(stream);
  }

  kernels::ref::Tensors in;
  in["x"] = download(block, "x", t, stream);
  if (block.tensor("enc")) in["enc"] = download(block, "enc", t, stream);  // T5's decoder
  for (const std::string& p : block.parameters()) in[p] = download(block, p, t, stream);
  if (backward) in["dout"] = download(block, "dout", t, stream);
  if (backward && c.activation == kernels::Activation::relu) {
    // The ReLU's mask as the GPU applied it (act > 0 with dropout off): where rounding moved a
    // pre-activation across 0, its gradient flips between 0 and the full value, which no
    // tolerance on the weight gradients could tell from a bug (ref::transformer_block).
    std::vector<double> mask = download(block, "act", t, stream);
    for (double& m : mask) m = m > 0 ? 1.0 : 0.0;
    in["relu_mask"] = std::move(mask);
  }
  const kernels::ref::Tensors ref = reference(c, part, backward, in);

  // bf16's mantissa is 8x coarser than fp16's; tf32 rounds the products' inputs to fp16's
  // mantissa (storage stays fp32); fp32 computes in fp32 throughout, so its limits are 100x
  // tighter: TF32 products would fail them. fp8 has limits of its own (BlockTolerances::fp8).
  const bool fp8 = c.precision == kernels::Precision::fp8;
  const double scale = fp8 ? 1.0 : t == Dtype::bf16 ? 6.0 : t == Dtype::fp32 ? 0.01 : 1.0;
  const BlockTolerances tol = fp8 ? BlockTolerances::fp8() : BlockTolerances{};
  std::string worst;
  double worst_ratio = -1;
  auto check = [&](const std::string& name, const std::string& gpu_name, double limit) {
    Comparison cmp = compare(download(block, gpu_name, t, stream), ref.at(name));
    require_close(name, cmp, {limit * scale});
    double ratio = cmp.rel_l2_error / (limit * scale);
    if (ratio > worst_ratio) {
      worst_ratio = ratio;
      char buf[64];
      std::snprintf(buf, sizeof buf, "rel_l2 %.1e in %s", cmp.rel_l2_error, name.c_str());
      worst = buf;
    }
  };
  const char* out_name = part == BlockPart::dense        ? "pre"
                         : part == BlockPart::dense_gelu ? "act"
                         : part == BlockPart::norm_qkv   ? "qkv"
                                                         : "out";
  check("out", out_name, part == BlockPart::layer ? tol.out : tol.part_out);
  if (backward) {
    check("dx", "dx", tol.dx);
    if (block.tensor("denc")) check("denc", "denc", tol.dx);
    for (const std::string& p : block.parameters()) {
      const bool matrix = p[0] == 'w';
      check("d" + p, "d" + p, matrix ? tol.weights : tol.vectors);
    }
  }
  return worst;
}

// Whether a forward validation of this layer should go through its backward's (above): layers
// only, whose fwd+bwd cases usually run too (the parts' cases are forward only).
bool has_backward(BlockConfig c, BlockPart part) {
  if (part != BlockPart::layer) return false;
  c.backward = true;
  try {
    kernels::check_block_config(c, part);
  } catch (const Unsupported&) {
    return false;
  } catch (const InvalidArgument&) {
    return false;
  }
  return true;
}

}  // namespace

std::string validate_block(const BlockConfig& config, BlockPart part, bool backward) {
  static std::mutex mu;
  static std::map<std::string, std::string> done;  // key -> worst error, or "!" + failure
  const std::string key = key_of(config, part, backward);
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = done.find(key);
    if (it != done.end()) {
      if (!it->second.empty() && it->second[0] == '!')
        XF_THROW(ValidationError, it->second.substr(1));
      return it->second;
    }
  }
  // A forward case validates the backward of its configuration first (cached for the fwd+bwd case
  // that usually follows), then its own forward against that reference: the float64 reference,
  // the slow part, is computed once for both. A failing backward does not fail the forward: its
  // own check below decides.
  if (!backward && has_backward(config, part)) {
    try {
      validate_block(config, part, true);
    } catch (const ValidationError&) {
    }
  }
  // Where the FFN's products can take its activation, both ways (the timed case runs what its
  // search chooses).
  std::string result;
  try {
    result = run_validation(config, part, backward, true, kernels::FfnProducts::unfused);
    if (kernels::ffn_products_fusable(config, part))
      result += "; fused ffn: " +
                run_validation(config, part, backward, true, kernels::FfnProducts::fused);
  } catch (const ValidationError& e) {
    std::lock_guard<std::mutex> lock(mu);
    done[key] = "!" + e.message();
    throw;
  }
  std::lock_guard<std::mutex> lock(mu);
  done[key] = result;
  return result;
}

std::string validate_block_as_given(const BlockConfig& config, BlockPart part, bool backward) {
  return run_validation(config, part, backward, false, config.ffn_products);
}

}  // namespace xfbench::block
