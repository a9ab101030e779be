#include "matmul_cases.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "xfbench/error.hpp"
#include "xfbench/names.hpp"

namespace xfbench::matmul {
namespace {

// Dimensions above this are typos, not GEMMs (a 2^24 square would need petabytes).
constexpr std::int64_t kMaxDim = std::int64_t(1) << 24;

std::int64_t parse_dim(const std::string& text, const std::string& item) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) {
    XF_THROW(InvalidArgument, "bad matmul shape '" + item + "': '" + text +
                                  "' is not a positive integer (expected MxNxK or BxMxNxK)");
  }
  errno = 0;
  long long v = std::strtoll(text.c_str(), nullptr, 10);
  if (errno == ERANGE || v <= 0 || v > kMaxDim) {
    XF_THROW(InvalidArgument, "bad matmul shape '" + item + "': " + text + " must be in 1.." +
                                  std::to_string(kMaxDim));
  }
  return v;
}

CaseName& add_dims(CaseName& name, const Shape& s) {
  if (s.batch != 1) name.add("batch", s.batch);
  return name.add("m", s.m).add("n", s.n).add("k", s.k);
}

const std::int64_t kSquares[] = {128, 512, 2048, 4096, 8192, 16384};

bool has(const std::vector<Layout>& ls, const Layout& l) {
  for (const Layout& x : ls)
    if (x.trans_a == l.trans_a && x.trans_b == l.trans_b) return true;
  return false;
}

}  // namespace

std::vector<Shape> parse_shapes(const std::string& list) {
  std::vector<Shape> out;
  std::vector<std::string> items;
  for (std::size_t start = 0;;) {
    std::size_t comma = list.find(',', start);
    items.push_back(list.substr(start, comma == std::string::npos ? comma : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  for (const std::string& item : items) {
    if (item.empty()) XF_THROW(InvalidArgument, "bad matmul shape list '" + list + "': empty item");
    std::vector<std::string> parts;
    std::size_t start = 0;
    for (;;) {
      std::size_t x = item.find('x', start);
      parts.push_back(item.substr(start, x == std::string::npos ? std::string::npos : x - start));
      if (x == std::string::npos) break;
      start = x + 1;
    }
    if (parts.size() != 3 && parts.size() != 4) {
      XF_THROW(InvalidArgument, "bad matmul shape '" + item + "': expected MxNxK or BxMxNxK");
    }
    std::vector<std::int64_t> v;
    for (const std::string& p : parts) v.push_back(parse_dim(p, item));
    Shape s;
    if (v.size() == 4) s.batch = v[0], v.erase(v.begin());
    s.m = v[0], s.n = v[1], s.k = v[2];
    out.push_back(s);
  }
  return out;
}

std::string Layout::name() const {
  return std::string(trans_a ? "T" : "N") + (trans_b ? "T" : "N");
}

Layout parse_layout(const std::string& name) {
  if (name == "NN") return {false, false};
  if (name == "NT") return {false, true};
  if (name == "TN") return {true, false};
  XF_THROW(InvalidArgument, "unknown matmul layout '" + name + "' (expected NN, NT or TN)");
}

std::string CaseSpec::name() const {
  CaseName n("Matmul");
  if (sweep) n.add("sweep");
  n.add(to_string(dtype)).add(layout.name());
  if (fp8_fast_accum) n.add("accum", "fast");
  if (!model.empty()) n.add("model", model).add("gemm", gemm);
  return add_dims(n, shape).str();
}

Layout default_layout(Dtype dtype) { return dtype == Dtype::fp8 ? Layout{false, true} : Layout{}; }

std::vector<CaseSpec> model_gemms(Dtype dtype, std::int64_t batch, std::int64_t seq) {
  const std::int64_t t = batch * seq;  // tokens
  const Layout linear{false, true};    // y = x·Wᵀ, W stored [out, in]
  const std::int64_t heads = 16, head_dim = 64;
  std::vector<CaseSpec> out;
  auto add = [&](const char* model, const char* gemm, Layout l, Shape s) {
    CaseSpec c;
    c.dtype = dtype, c.layout = l, c.shape = s, c.model = model, c.gemm = gemm;
    out.push_back(c);
  };
  // BERT-large: hidden 1024, FFN 4096, 16 heads of 64. GPT-2 medium and T5-large have the same
  // layer GEMMs (hidden 1024, FFN 4096, 16×64 heads), so only their LM heads are listed.
  add("bert-large", "qkv", linear, {t, 3072, 1024});
  add("bert-large", "attn_out", linear, {t, 1024, 1024});
  add("bert-large", "ffn_up", linear, {t, 4096, 1024});
  add("bert-large", "ffn_down", linear, {t, 1024, 4096});
  add("bert-large", "attn_scores", {false, true}, {seq, seq, head_dim, batch * heads});  // Q·Kᵀ
  add("bert-large", "attn_context", {false, false}, {seq, head_dim, seq, batch * heads});  // P·V
  add("gpt2-medium", "lm_head", linear, {t, 50257, 1024});
  // The same head with the vocabulary padded to a multiple of 64 (as Megatron does): rows of C
  // 16-byte aligned, so the fast kernels apply.
  add("gpt2-medium", "lm_head_pad64", linear, {t, 50304, 1024});
  add("t5-large", "lm_head", linear, {t, 32128, 1024});
  return out;
}

std::vector<CaseSpec> select_cases(const Selection& sel) {
  const std::vector<Dtype> all = {Dtype::fp32, Dtype::tf32, Dtype::fp16, Dtype::bf16, Dtype::fp8};
  const std::vector<Dtype> half = {Dtype::fp16, Dtype::bf16};
  const bool user_layouts = !sel.layouts.empty();
  std::vector<CaseSpec> out;
  auto add = [&](Dtype d, Layout l, Shape s) {
    CaseSpec c;
    c.dtype = d, c.layout = l, c.shape = s;
    out.push_back(c);
  };

  if (!sel.shapes.empty()) {
    for (Dtype d : sel.dtypes.empty() ? all : sel.dtypes) {
      for (Layout l : user_layouts ? sel.layouts : std::vector<Layout>{default_layout(d)}) {
        for (const Shape& s : sel.shapes) add(d, l, s);
      }
    }
  } else {
    // The seeds' squares. fp32 stops at 8192: one 16384³ fp32 product takes ~0.2 s.
    for (Dtype d : sel.dtypes.empty() ? all : sel.dtypes) {
      for (Layout l : user_layouts ? sel.layouts : std::vector<Layout>{default_layout(d)}) {
        for (std::int64_t n : kSquares) {
          if (d == Dtype::fp32 && n > 8192 && sel.dtypes.empty()) continue;
          add(d, l, {n, n, n});
        }
      }
    }
    // Transposed layouts at two sizes (unless the user chose layouts: then squares cover them).
    if (!user_layouts) {
      for (Dtype d : sel.dtypes.empty() ? half : sel.dtypes) {
        if (d == Dtype::fp8) continue;  // fp8 squares already run in NT
        for (const char* l : {"NT", "TN"}) {
          for (std::int64_t n : {4096, 8192}) add(d, parse_layout(l), {n, n, n});
        }
      }
    }
    // Model GEMMs at the seeds' batch×seq: 64×512 and 128×128 tokens.
    for (Dtype d : sel.dtypes.empty() ? half : sel.dtypes) {
      for (auto [b, s] : {std::pair<std::int64_t, std::int64_t>{64, 512}, {128, 128}}) {
        for (const CaseSpec& c : model_gemms(d, b, s)) {
          if (!user_layouts || has(sel.layouts, c.layout)) out.push_back(c);
        }
      }
    }
  }

  for (Dtype d : sel.sweep_dtypes) {
    for (std::int64_t m : sel.sweep_m) {
      for (std::int64_t n : sel.sweep_n) {
        for (std::int64_t k : sel.sweep_k) {
          CaseSpec c;
          c.dtype = d, c.layout = sel.sweep_layout, c.shape = {m, n, k}, c.sweep = true;
          out.push_back(c);
        }
      }
    }
  }
  for (CaseSpec& c : out) c.fp8_fast_accum = sel.fp8_fast_accum && c.dtype == Dtype::fp8;
  return out;
}

// The error left once inputs are what they are (the reference reads the same stored values):
//  - output rounding, relative, uniform within half an ulp: rel-L2 ≈ 1.6e-4 for fp16 (2^-11),
//    ≈ 1.6e-3 for bf16 (2^-8, also fp8's output), ≈ 3e-8 for fp32;
//  - tf32 rounds (or truncates) each input to a 10-bit mantissa inside the tensor core:
//    ≈ 3e-4 (≈ 6e-4 truncating) for a sum of random-sign products;
//  - fp32 accumulation: ≈ 2^-24·sqrt(k) at worst for a plain running sum (tiling does better);
//  - fp8 on Hopper accumulates in the tensor core with fewer mantissa bits before each fp32
//    promotion: ≈ 1e-4·sqrt(k) at worst.
// Tolerances (rel-L2, growth = sqrt(k/1024)): fp32 1e-6 + 4e-6·growth, tf32 2e-3, fp16 1e-3,
// bf16 1e-2 (+ 4e-6·growth each), fp8 1e-2 + 3e-3·growth: 3-10x the expected error, so rounding
// never fails while a wrong product (a transposed operand or a lost term: rel-L2 ≈ 1) fails by
// orders of magnitude, and a bf16-rounded result fails the fp16 tolerance (tests/matmul).
Tolerance tolerance_for(Dtype dtype, std::int64_t k) {
  const double growth = std::sqrt(double(std::max<std::int64_t>(k, 1)) / 1024.0);
  Tolerance t;
  switch (dtype) {
    case Dtype::fp64:
      t.rel_l2 = 1e-12 + 1e-14 * growth;
      break;
    case Dtype::fp32:
      t.rel_l2 = 1e-6 + 4e-6 * growth;
      break;
    case Dtype::tf32:
      t.rel_l2 = 2e-3 + 4e-6 * growth;
      break;
    case Dtype::fp16:
      t.rel_l2 = 1e-3 + 4e-6 * growth;
      break;
    case Dtype::bf16:
      t.rel_l2 = 1e-2 + 4e-6 * growth;
      break;
    case Dtype::fp8:
      t.rel_l2 = 1e-2 + 3e-3 * growth;
      break;
  }
  return t;
}

std::vector<std::int64_t> parse_sizes(const std::vector<std::string>& items, const char* what) {
  std::vector<std::int64_t> out;
  for (const std::string& s : items) out.push_back(parse_dim(s, std::string(what) + "=" + s));
  return out;
}

Dtype fill_type(kernels::ElemType t) {
  for (Dtype d : {Dtype::fp32, Dtype::fp16, Dtype::bf16, Dtype::fp8, Dtype::fp64})
    if (element_of(d) == t) return d;
  return Dtype::fp32;
}

}  // namespace xfbench::matmul
