// Helpers of the TrainStep tests: the tiny configuration, random parameters for the
// float64 reference, and a batch made of micro-batches.
#pragma once

#include <random>
#include <string>
#include <vector>

#include "kernels/models/language_model_config.hpp"
#include "kernels/models/reference/language_model_ref.hpp"
#include "train_case.hpp"

namespace xftest {

// 2 layers, hidden 64, 4 heads, FFN 256, vocab 512 (BERT: 2 token types), batch 2, seq 32,
// dropout off.
inline xfbench::kernels::TrainConfig tiny(
    xfbench::kernels::LmKind kind,
    xfbench::kernels::Precision p = xfbench::kernels::Precision::fp16) {
  using namespace xfbench::kernels;
  TrainConfig c;
  c.model = lm_model(kind == LmKind::masked ? "bert-large" : "gpt2-medium");
  c.model.layers = 2, c.model.hidden = 64, c.model.heads = 4, c.model.intermediate = 256;
  c.model.vocab = 512, c.model.positions = 128;
  c.batch = 2, c.seq = 32;
  c.precision = p;
  c.dropout = 0.f;
  return c;
}

// The tiny Llama: 2 layers, hidden 128, 4 query heads over 2 key/value heads of 64
// (GQA 2:1), MLP 256, RoPE with Llama 3.1's scaling, vocab 512; tied head or its own; batch 2,
// seq 32.
inline xfbench::kernels::TrainConfig tiny_llama(
    xfbench::kernels::Precision p = xfbench::kernels::Precision::bf16, bool tied = true) {
  using namespace xfbench::kernels;
  TrainConfig c;
  c.model = lm_model("llama-3.1-8b");
  c.model.layers = 2, c.model.hidden = 128, c.model.heads = 4, c.model.kv_heads = 2;
  c.model.head_dim = 64, c.model.intermediate = 256, c.model.vocab = 512;
  c.model.tied_head = tied;
  c.batch = 2, c.seq = 32;
  c.precision = p;
  c.dropout = 0.f;
  return c;
}

// The shape of every parameter of a model (language_model_ref.hpp's names).
inline std::size_t parameter_size(const xfbench::kernels::LmModel& m, const std::string& name) {
  const std::size_t H = m.hidden, I = m.intermediate, V = m.vocab;
  const std::string local = name.substr(name.find('.') + 1);
  if (name == "word" || name == "lm_head") return V * H;
  if (m.llama) {  // grouped-query QKV over the attention width, a gated MLP
    const std::size_t A = std::size_t(m.heads) * m.head_dim,
                      KV = std::size_t(m.kv_heads) * m.head_dim;
    if (local == "wqkv") return (A + 2 * KV) * H;
    if (local == "wo") return H * A;
    if (local == "wi") return 2 * I * H;
  }
  if (name == "position") return std::size_t(m.positions) * H;
  if (name == "type") return std::size_t(m.token_types) * H;
  if (name == "decoder_b") return V;
  if (name == "head_w" || local == "wo") return H * H;
  if (local == "wqkv") return 3 * H * H;
  if (local == "bqkv") return 3 * H;
  if (local == "wi" || local == "wout") return I * H;
  if (local == "bi") return I;
  return H;  // biases and LayerNorm parameters of width H
}

// Random parameters: weights uniform ±0.1, LayerNorm weights 0.9..1.1, biases ±0.1.
inline xfbench::kernels::ref::Tensors random_parameters(const xfbench::kernels::LmModel& m,
                                                        unsigned seed) {
  std::mt19937_64 gen(seed);
  xfbench::kernels::ref::Tensors t;
  for (const std::string& name : xfbench::kernels::ref::language_model_parameters(m)) {
    const bool norm_w = name.find("ln") != std::string::npos && name.back() == 'w';
    std::uniform_real_distribution<double> d(norm_w ? 0.9 : -0.1, norm_w ? 1.1 : 0.1);
    std::vector<double> v(parameter_size(m, name));
    for (double& x : v) x = d(gen);
    t[name] = v;
  }
  return t;
}

// The micro-batches of an accumulated step as one batch (concatenated along the batch).
using xfbench::kernels::concatenate;

}  // namespace xftest
