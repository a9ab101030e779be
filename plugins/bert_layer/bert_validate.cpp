#include "bert_validate.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "bert_init.hpp"
#include "kernels/reference/bert_layer_ref.hpp"
#include "xfbench/xfbench.hpp"

namespace xfbench::bert {

using kernels::BertConfig;
using kernels::BertLayer;
using kernels::BertPart;

std::vector<double> download(const BertLayer& layer, const std::string& name, Dtype t,
                             cudaStream_t s) {
  const std::size_t n = layer.elements(name);
  std::vector<std::uint16_t> raw(n);
  XF_CUDA_CHECK(cudaMemcpyAsync(raw.data(), layer.tensor(name), n * 2, cudaMemcpyDeviceToHost, s));
  XF_CUDA_CHECK(cudaStreamSynchronize(s));
  std::vector<double> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (t == Dtype::fp16) {
      __half h;
      std::memcpy(&h, &raw[i], 2);
      out[i] = __half2float(h);
    } else {
      __nv_bfloat16 b;
      std::memcpy(&b, &raw[i], 2);
      out[i] = __bfloat162float(b);
    }
  }
  return out;
}

namespace {

// Validation runs at a fixed small batch and sequence: one per model, precision, backend, part.
std::string key_of(BertConfig c, BertPart part, bool backward) {
  c.batch = 0, c.seq = 0;
  return c.describe() + "/" + kernels::to_string(part) + (backward ? "/bwd" : "/fwd");
}

std::string run_validation(const BertConfig& full, BertPart part, bool backward) {
  BertConfig c = full;
  c.batch = 2, c.dropout = 0.f;                                     // small, deterministic
  c.seq = c.backend == kernels::AttentionBackend::flash ? 64 : 32;  // flash takes seq % 64 == 0
  c.backward = backward;
  const Dtype t = c.precision == kernels::Precision::fp16 ? Dtype::fp16 : Dtype::bf16;
  Stream stream;
  BertLayer layer(c, part);
  init_layer(layer, 1234, stream);
  layer.forward(stream);
  if (backward) layer.backward(stream);

  kernels::ref::Tensors in, ref;
  in["x"] = download(layer, "x", t, stream);
  for (const std::string& p : layer.parameters()) in[p] = download(layer, p, t, stream);
  if (backward) in["dout"] = download(layer, "dout", t, stream);
  kernels::ref::bert_layer(c, part, in, backward, ref);

  const double scale = t == Dtype::bf16 ? 6.0 : 1.0;
  const BertTolerances tol;
  std::string worst;
  double worst_ratio = -1;
  auto check = [&](const std::string& name, const std::string& gpu_name, double limit) {
    Comparison cmp = compare(download(layer, gpu_name, t, stream), ref.at(name));
    require_close(name, cmp, {limit * scale});
    double ratio = cmp.rel_l2_error / (limit * scale);
    if (ratio > worst_ratio) {
      worst_ratio = ratio;
      char buf[64];
      std::snprintf(buf, sizeof buf, "rel_l2 %.1e in %s", cmp.rel_l2_error, name.c_str());
      worst = buf;
    }
  };
  const char* out_name = part == BertPart::dense || part == BertPart::dense_gelu
                             ? (part == BertPart::dense ? "pre" : "act")
                             : "out";
  check("out", out_name, tol.out);
  if (backward) {
    check("dx", "dx", tol.dx);
    for (const std::string& p : layer.parameters()) {
      const bool matrix = p[0] == 'w';
      check("d" + p, "d" + p, matrix ? tol.weights : tol.vectors);
    }
  }
  return worst;
}

}  // namespace

std::string validate_bert(const BertConfig& config, BertPart part, bool backward) {
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
  std::string result;
  try {
    result = run_validation(config, part, backward);
  } catch (const ValidationError& e) {
    std::lock_guard<std::mutex> lock(mu);
    done[key] = "!" + e.message();
    throw;
  }
  std::lock_guard<std::mutex> lock(mu);
  done[key] = result;
  return result;
}

}  // namespace xfbench::bert
