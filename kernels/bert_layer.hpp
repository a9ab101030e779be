// HF BertLayer (post-LayerNorm encoder block) forward and backward on the kernels of this folder:
//
//   qkv  = x·Wqkvᵀ + bqkv                      GEMM with bias epilogue           [T, 3H]
//   ctx  = attention(qkv)                      unfused (eager), cuDNN SDPA, or   [T, H]
//                                              xfbench's flash attention
//   h1   = LN1(dropout(ctx·Woᵀ + bo) + x)      GEMM, fused bias/dropout/residual/LN
//   pre  = h1·Wiᵀ                              GEMM                              [T, I]
//   act  = gelu(pre + bi)                      erf GELU (BERT's "gelu")
//   out  = LN2(dropout(act·Wout ᵀ + bout) + h1) GEMM, fused bias/dropout/residual/LN
//
// T = batch·seq tokens, rows b-major (HF's [B, S, H]). Weights are stored as nn.Linear's [out, in].
// The backward computes the input gradient and every parameter gradient. A Part selects a piece
// of the layer, as the seeds time them: dense (h1·Wiᵀ + bi), dense_gelu, ffn (BertIntermediate +
// BertOutput), attention (BertAttention: QKV, attention, output projection, LN1).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/attention.hpp"
#include "kernels/gelu.hpp"
#include "kernels/gemm.hpp"

namespace xfbench::kernels {

enum class AttentionBackend { unfused, fused, flash };
enum class BertPart { layer, dense, dense_gelu, ffn, attention };
const char* to_string(AttentionBackend b);
const char* to_string(BertPart p);

struct BertConfig {
  int hidden = 1024, heads = 16, intermediate = 4096;  // bert-large
  int batch = 1, seq = 128;
  Precision precision = Precision::fp16;  // fp16 or bf16
  AttentionBackend backend = AttentionBackend::fused;
  float dropout = 0.1f;  // hidden and attention-probability dropout (training mode)
  float eps = 1e-12f;
  Gelu gelu = Gelu::erf;
  // false: forward only, as under torch.no_grad (dropout still on): no gradient buffers, and none
  // of what a backward would read is saved.
  bool backward = true;
  int tokens() const { return batch * seq; }
  int head_dim() const { return hidden / heads; }
  std::string describe() const;
};

// Throws InvalidArgument when the configuration cannot be built (hidden not divisible by heads,
// widths the kernels cannot take) and Unsupported when the backend cannot run it here.
void check_bert_config(const BertConfig& c);

// The seeds' FLOP counts: layer forward 24·b·s·h² + 4·b·s²·h (8bsh² + 4bshI + 4bs²h for any I);
// dense and dense_gelu 2·T·h·I; ffn 4·T·h·I; attention 8bsh² + 4bs²h. Backward is twice forward.
double bert_forward_flops(const BertConfig& c, BertPart part);

// Parameters, activations and gradients on the device, owned by the layer. Every tensor is
// `T`-typed (fp16/bf16) except LayerNorm statistics (fp32).
class BertLayer {
 public:
  explicit BertLayer(const BertConfig& config, BertPart part = BertPart::layer);
  ~BertLayer();
  BertLayer(const BertLayer&) = delete;
  BertLayer& operator=(const BertLayer&) = delete;

  const BertConfig& config() const;
  BertPart part() const;

  // Parameter names of this part ("wqkv", "bqkv", ...); fill them and "x" before the forward.
  std::vector<std::string> parameters() const;

  // One training step's dropout masks come from (seed, step); the backward reuses the forward's.
  void forward(cudaStream_t stream, std::uint64_t step = 0);
  // Searches the algorithms of every GEMM plan not searched yet, on this layer's tensors (runs a
  // forward and backward; synchronises). Call after filling the tensors, outside timed regions.
  void tune(cudaStream_t stream);

  // Needs the forward of the same step; reads "dout". Only the layer, ffn and attention parts.
  void backward(cudaStream_t stream, std::uint64_t step = 0);

  // Named device tensors (for validation and tests): "x", "out", "dout", "dx", and parameters
  // "wqkv","bqkv","wo","bo","ln1_w","ln1_b","wi","bi","wout","bout","ln2_w","ln2_b", with
  // gradients as "d<name>". Returns nullptr for a tensor the part does not have.
  void* tensor(const std::string& name) const;
  std::size_t elements(const std::string& name) const;
  // Peak device bytes this layer holds.
  std::size_t device_bytes() const;

  struct Impl;  // implementation detail (bert_layer.cu)

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace xfbench::kernels
