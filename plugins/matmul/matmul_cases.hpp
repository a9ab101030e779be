// Which Matmul cases exist, what they are called, and how close each must come to its float64
// reference. Pure logic (no GPU, no flags): unit-tested in tests/matmul.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/gemm.hpp"
#include "xfbench/dtype.hpp"
#include "xfbench/validate.hpp"

namespace xfbench::matmul {

struct Shape {
  std::int64_t m = 0, n = 0, k = 0, batch = 1;
};

// "MxNxK" or "BxMxNxK" (B: strided batch), comma-separated, e.g. "4096x4096x4096,16x512x512x64".
// Throws InvalidArgument naming the offending item.
std::vector<Shape> parse_shapes(const std::string& list);

// Row-major C[m,n] = op(A)·op(B); "NT" means A stored [m,k] and B stored [n,k].
struct Layout {
  bool trans_a = false, trans_b = false;
  std::string name() const;
};
Layout parse_layout(const std::string& name);  // NN, NT, TN; throws InvalidArgument

struct CaseSpec {
  Dtype dtype = Dtype::bf16;
  Layout layout;
  Shape shape;
  std::string model, gemm;  // model GEMMs: e.g. "bert-large", "qkv"
  bool sweep = false;
  bool fp8_fast_accum = false;  // fp8: no periodic fp32 promotion (another, less exact result)
  // Matmul/<dtype>/<layout>/[accum:fast/][model:X/gemm:Y/][batch:B/]m:M/n:N/k:K, or
  // Matmul/sweep/<dtype>/<layout>/[accum:fast/]m:M/n:N/k:K.
  std::string name() const;
};

// What the user asked for; empty lists mean "the defaults" (see README).
struct Selection {
  std::vector<Dtype> dtypes;
  std::vector<Layout> layouts;
  std::vector<Shape> shapes;
  std::vector<Dtype> sweep_dtypes;
  std::vector<std::int64_t> sweep_m, sweep_n, sweep_k;
  Layout sweep_layout{false, true};
  bool fp8_fast_accum = false;  // every fp8 case accumulates fast (and says so in its name)
};

// Seeds' squares (every dtype, NN; fp8 NT), NT/TN at 4096 and 8192 (fp16, bf16), and the GEMMs of
// BERT-large / GPT-2 medium / T5-large in fp16 and bf16 at their natural layouts; or the user's
// shapes; plus the sweep grid for each sweep dtype.
std::vector<CaseSpec> select_cases(const Selection& sel);

// Model GEMMs at one token count (batch·seq): the layer's forward products.
std::vector<CaseSpec> model_gemms(Dtype dtype, std::int64_t batch, std::int64_t seq);

// The layout a dtype runs in by default: NN, except fp8 (cuBLASLt wants both operands K-major).
Layout default_layout(Dtype dtype);

// rel-L2 tolerance of C (sampled) against float64 op(A)·op(B) of the same stored inputs.
Tolerance tolerance_for(Dtype dtype, std::int64_t k);

// The SDK dtype that fills a matrix of this storage type with random values.
Dtype fill_type(kernels::ElemType t);

std::vector<std::int64_t> parse_sizes(const std::vector<std::string>& items, const char* what);

}  // namespace xfbench::matmul
