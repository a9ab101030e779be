// kernels/gemm.hpp on the GPU against float64 CPU products of the same stored inputs: every
// precision and layout, alpha/beta, strided batches, each epilogue, the search, the sampled
// reference kernels. Skipped without a GPU.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <tuple>
#include <vector>

#include <unistd.h>

#include "kernels/gemm.hpp"
#include "matmul_cases.hpp"
#include "test_host.hpp"
#include "xfbench/device.hpp"
#include "xfbench/error.hpp"
#include "xfbench/memory.hpp"
#include "xfbench/validate.hpp"

namespace k = xfbench::kernels;
using xfbench::Dtype;

namespace {

class GemmGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!xfbench::gpu_unavailable_reason().empty())
      GTEST_SKIP() << xfbench::gpu_unavailable_reason();
    xfbench::select_device(0);
  }
};

using k::dtype_of;

// A device matrix of `count` elements of type `t`, filled uniform in [lo, hi) or poisoned.
struct Mat {
  k::ElemType type;
  std::size_t count;
  xfbench::DeviceMemory mem;
  Mat(k::ElemType t, std::size_t n) : type(t), count(n), mem(n * k::elem_size(t)) {}
  void fill(std::uint64_t seed, double lo = -1, double hi = 1) {
    xfbench::fill_uniform(mem.get(), count, xfbench::matmul::fill_type(type), seed, lo, hi,
                          nullptr);
  }
  void poison() { xfbench::poison(mem.get(), mem.bytes(), nullptr); }
  std::vector<double> host() const {
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<unsigned char> raw(mem.bytes());
    EXPECT_EQ(cudaMemcpy(raw.data(), mem.get(), raw.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    std::vector<double> out(count);
    for (std::size_t i = 0; i < count; ++i) {
      const unsigned char* p = raw.data() + i * k::elem_size(type);
      switch (type) {
        case k::ElemType::f32: {
          float f;
          std::memcpy(&f, p, 4);
          out[i] = f;
          break;
        }
        case k::ElemType::f16: {
          __half h;
          std::memcpy(&h, p, 2);
          out[i] = __half2float(h);
          break;
        }
        case k::ElemType::bf16: {
          __nv_bfloat16 h;
          std::memcpy(&h, p, 2);
          out[i] = __bfloat162float(h);
          break;
        }
        case k::ElemType::e4m3: {
          __nv_fp8_e4m3 h;
          std::memcpy(&h, p, 1);
          out[i] = float(h);
          break;
        }
      }
    }
    return out;
  }
};

// float64 op(A)·op(B) at C's index positions (b·stride_c + i·ldc + j).
std::vector<double> cpu_product(const k::GemmDesc& d, const std::vector<double>& a,
                                const std::vector<double>& b) {
  std::vector<double> c(k::c_elements(d), 0.0);
  for (std::int64_t bi = 0; bi < d.batch; ++bi) {
    for (std::int64_t i = 0; i < d.m; ++i) {
      for (std::int64_t j = 0; j < d.n; ++j) {
        double s = 0;
        for (std::int64_t kk = 0; kk < d.k; ++kk) {
          double x = d.trans_a ? a[bi * d.a_stride() + kk * d.a_ld() + i]
                               : a[bi * d.a_stride() + i * d.a_ld() + kk];
          double y = d.trans_b ? b[bi * d.b_stride() + j * d.b_ld() + kk]
                               : b[bi * d.b_stride() + kk * d.b_ld() + j];
          s += x * y;
        }
        c[bi * d.c_stride() + i * d.c_ld() + j] = s;
      }
    }
  }
  return c;
}

// The elements of C that belong to the product (skips padding between rows and items).
std::vector<double> valid(const k::GemmDesc& d, const std::vector<double>& c) {
  std::vector<double> out;
  for (std::int64_t bi = 0; bi < d.batch; ++bi)
    for (std::int64_t i = 0; i < d.m; ++i)
      for (std::int64_t j = 0; j < d.n; ++j) out.push_back(c[bi * d.c_stride() + i * d.c_ld() + j]);
  return out;
}

// cuBLASLt's GELU (tanh form) and its derivative.
double gelu(double x) {
  const double c = std::sqrt(2.0 / M_PI);
  return 0.5 * x * (1.0 + std::tanh(c * (x + 0.044715 * x * x * x)));
}
double gelu_grad(double x) {
  const double c = std::sqrt(2.0 / M_PI);
  double t = std::tanh(c * (x + 0.044715 * x * x * x));
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * c * (1.0 + 3.0 * 0.044715 * x * x);
}

struct Problem {
  k::GemmDesc d;
  Mat a, b, c;
  explicit Problem(const k::GemmDesc& desc)
      : d(desc),
        a(k::input_type(desc.precision), k::a_elements(desc)),
        b(k::input_type(desc.precision), k::b_elements(desc)),
        c(desc.out_type(), k::c_elements(desc)) {
    a.fill(11);
    b.fill(12);
    c.poison();
  }
  k::GemmOperands ops() const {
    k::GemmOperands o;
    o.a = a.mem.get(), o.b = b.mem.get(), o.c = c.mem.get();
    return o;
  }
  std::vector<double> reference() const { return cpu_product(d, a.host(), b.host()); }
};

void expect_close(const std::vector<double>& got, const std::vector<double>& ref, double tol,
                  const std::string& what) {
  xfbench::Comparison cmp = xfbench::compare(got, ref);
  EXPECT_TRUE(xfbench::within(cmp, {tol})) << what << ": " << cmp.describe() << " tol " << tol;
}

k::GemmDesc desc(k::Precision p, const char* layout, std::int64_t m, std::int64_t n,
                 std::int64_t kk) {
  k::GemmDesc d;
  d.precision = p;
  d.trans_a = layout[0] == 'T';
  d.trans_b = layout[1] == 'T';
  d.m = m, d.n = n, d.k = kk;
  return d;
}

bool has_fp8() { return xfbench::device_info().cc() >= 89; }

}  // namespace

TEST_F(GemmGpu, EveryPrecisionAndLayoutMatchesFloat64) {
  for (k::Precision p : {k::Precision::fp32, k::Precision::tf32, k::Precision::fp16,
                         k::Precision::bf16, k::Precision::fp8}) {
    if (p == k::Precision::fp8 && !has_fp8()) continue;
    for (const char* layout : {"NN", "NT", "TN"}) {
      if (p == k::Precision::fp8 && std::string(layout) != "NT") continue;
      // Distinct m, n, k so a swapped dimension or operand cannot pass.
      k::GemmDesc d = desc(p, layout, 96, 160, 208);
      Problem pr(d);
      k::Gemm g(d);
      g.run(nullptr, pr.ops());
      expect_close(valid(d, pr.c.host()), valid(d, pr.reference()),
                   xfbench::matmul::tolerance_for(dtype_of(p), d.k).rel_l2,
                   d.describe() + " " + g.algo_info().label());
    }
  }
}

TEST_F(GemmGpu, AlphaBetaAccumulateIntoC) {
  for (k::Precision p : {k::Precision::fp32, k::Precision::bf16}) {
    k::GemmDesc d = desc(p, "NN", 64, 48, 80);
    Problem pr(d);
    pr.c.fill(13);
    std::vector<double> c0 = pr.c.host(), ref = pr.reference();
    for (std::size_t i = 0; i < ref.size(); ++i) ref[i] = 0.5 * ref[i] + 2.0 * c0[i];
    k::Gemm g(d);
    k::GemmOperands o = pr.ops();
    o.alpha = 0.5f, o.beta = 2.0f;
    g.run(nullptr, o);
    expect_close(pr.c.host(), ref, xfbench::matmul::tolerance_for(dtype_of(p), d.k).rel_l2,
                 "alpha/beta " + d.describe());
  }
}

TEST_F(GemmGpu, Fp8ReadsCFromAnotherBuffer) {
  if (!has_fp8()) GTEST_SKIP() << "no fp8 tensor cores";
  k::GemmDesc d = desc(k::Precision::fp8, "NT", 64, 96, 128);
  Problem pr(d);
  Mat c0(d.out_type(), k::c_elements(d));
  c0.fill(14);
  std::vector<double> ref = pr.reference(), h0 = c0.host();
  for (std::size_t i = 0; i < ref.size(); ++i) ref[i] += h0[i];
  k::Gemm g(d);
  k::GemmOperands o = pr.ops();
  o.beta = 1.0f;
  EXPECT_THROW(g.run(nullptr, o), xfbench::InvalidArgument);  // fp8 cannot accumulate in place
  o.c_in = c0.mem.get();
  g.run(nullptr, o);
  expect_close(pr.c.host(), ref, xfbench::matmul::tolerance_for(Dtype::fp8, d.k).rel_l2,
               "fp8 with beta=1 " + g.algo_info().label());
}

TEST_F(GemmGpu, StridedBatchesLikeAttention) {
  // Q·Kᵀ (NT) and P·V (NN) over 6 items, one with padded rows and gaps between items.
  for (const char* layout : {"NT", "NN"}) {
    k::GemmDesc d = desc(k::Precision::bf16, layout, 64, 32, 48);
    d.batch = 6;
    Problem packed(d);
    k::Gemm(d).run(nullptr, packed.ops());
    expect_close(valid(d, packed.c.host()), valid(d, packed.reference()), 1e-2,
                 std::string("packed batch ") + layout);

    d.lda = d.a_ld() + 16, d.ldb = d.b_ld() + 8, d.ldc = d.n + 24;
    d.stride_a = (d.trans_a ? d.k : d.m) * d.lda + 64;
    d.stride_b = (d.trans_b ? d.n : d.k) * d.ldb + 128;
    d.stride_c = d.m * d.ldc + 32;
    Problem padded(d);
    k::Gemm(d).run(nullptr, padded.ops());
    expect_close(valid(d, padded.c.host()), valid(d, padded.reference()), 1e-2,
                 std::string("padded batch ") + layout);
  }
}

class GemmEpilogue : public GemmGpu, public ::testing::WithParamInterface<k::Precision> {};

// The plan of an epilogue product, or nullptr and the reason when cuBLASLt has no algorithm for
// it in this precision; bf16 (the layers' case) must exist.
std::unique_ptr<k::Gemm> epilogue_plan(const k::GemmDesc& d, std::string* why) {
  try {
    return std::make_unique<k::Gemm>(d);
  } catch (const xfbench::Unsupported& u) {
    if (d.precision == k::Precision::bf16) ADD_FAILURE() << "bf16 must exist: " << u.what();
    *why = u.what();
    return nullptr;
  }
}

// Runs `check(label)` with each of a plan's candidates selected: the epilogue's own heuristics
// and the plain product's algorithms that cuBLASLt accepted for the epilogue must all be right.
template <class Check>
void for_each_candidate(k::Gemm& g, const Check& check) {
  for (int i = 0; i < g.candidates(); ++i) {
    g.select(i);
    check(g.algo_info().label());
  }
  g.select(0);
}

TEST_P(GemmEpilogue, BiasAndGeluForward) {
  const k::Precision p = GetParam();
  const double tol = xfbench::matmul::tolerance_for(dtype_of(p), 128).rel_l2;
  // Two shapes: a small one and one large enough for the big tiles the layers run.
  for (auto [e, m, n] : {std::tuple{k::Epilogue::bias, 64, 96},
                         {k::Epilogue::bias, 1024, 768},
                         {k::Epilogue::gelu_bias, 64, 96},
                         {k::Epilogue::gelu_aux_bias, 64, 96},
                         {k::Epilogue::gelu_aux_bias, 1024, 768}}) {
    k::GemmDesc d = desc(p, "NT", m, n, 128);  // y = gelu(x·Wᵀ + b)
    d.epilogue = e;
    Problem pr(d);
    Mat bias(d.out_type(), std::size_t(d.n)), aux(d.out_type(), k::c_elements(d));
    bias.fill(21, -2, 2);
    aux.poison();
    std::string why;
    std::unique_ptr<k::Gemm> g = epilogue_plan(d, &why);
    if (!g) GTEST_SKIP() << why;
    k::GemmOperands o = pr.ops();
    o.bias = bias.mem.get();
    o.aux = aux.mem.get();
    std::vector<double> pre = pr.reference(), hb = bias.host(), out(pre.size());
    for (std::int64_t i = 0; i < d.m; ++i) {
      for (std::int64_t j = 0; j < d.n; ++j) {
        double& x = pre[i * d.n + j];
        x += hb[j];
        out[i * d.n + j] = e == k::Epilogue::bias ? x : gelu(x);
      }
    }
    for_each_candidate(*g, [&](const std::string& algo) {
      pr.c.poison();
      aux.poison();
      g->run(nullptr, o);
      expect_close(pr.c.host(), out, tol, std::string("C of ") + to_string(e) + " " + algo);
      if (e == k::Epilogue::gelu_aux_bias)
        expect_close(aux.host(), pre, tol, "aux (GELU input) " + algo);
    });
  }
}

TEST_P(GemmEpilogue, GeluBackwardWithBiasGradient) {
  const k::Precision p = GetParam();
  // dH = (dY·W2) * gelu'(pre), dbias = Σ_rows dH: m tokens, n = FFN width, k = hidden.
  k::GemmDesc d = desc(p, "NN", 128, 96, 64);
  d.epilogue = k::Epilogue::dgelu_bgrad;
  Problem pr(d);
  Mat pre(d.out_type(), k::c_elements(d)), dbias(d.out_type(), std::size_t(d.n));
  pre.fill(31, -3, 3);
  dbias.poison();
  std::string why;
  std::unique_ptr<k::Gemm> g = epilogue_plan(d, &why);
  if (!g) GTEST_SKIP() << why;
  k::GemmOperands o = pr.ops();
  o.aux = pre.mem.get();
  o.bias_grad = dbias.mem.get();
  std::vector<double> dh = pr.reference(), hp = pre.host(), db(std::size_t(d.n), 0.0);
  for (std::int64_t i = 0; i < d.m; ++i) {
    for (std::int64_t j = 0; j < d.n; ++j) {
      dh[i * d.n + j] *= gelu_grad(hp[i * d.n + j]);
      db[j] += dh[i * d.n + j];
    }
  }
  const double tol = 2 * xfbench::matmul::tolerance_for(dtype_of(p), d.k).rel_l2;
  for_each_candidate(*g, [&](const std::string& algo) {
    pr.c.poison();
    dbias.poison();
    g->run(nullptr, o);
    expect_close(pr.c.host(), dh, tol, "dgelu output " + algo);
    expect_close(dbias.host(), db, tol, "bias gradient " + algo);
  });
}

TEST_P(GemmEpilogue, WeightGradientWithBiasGradient) {
  const k::Precision p = GetParam();
  // dW[out,in] = dYᵀ·X (layout TN: dY stored [tokens, out]), db[out] = Σ_tokens dY.
  k::GemmDesc d = desc(p, "TN", 96, 80, 256);
  d.epilogue = k::Epilogue::bgrad_a;
  Problem pr(d);
  Mat db(d.out_type(), std::size_t(d.m));
  db.poison();
  std::string why;
  std::unique_ptr<k::Gemm> g = epilogue_plan(d, &why);
  if (!g) GTEST_SKIP() << why;
  k::GemmOperands o = pr.ops();
  o.bias_grad = db.mem.get();
  std::vector<double> dy = pr.a.host(), ref_db(std::size_t(d.m), 0.0);
  for (std::int64_t t = 0; t < d.k; ++t)
    for (std::int64_t i = 0; i < d.m; ++i) ref_db[i] += dy[t * d.m + i];
  const double tol = 2 * xfbench::matmul::tolerance_for(dtype_of(p), d.k).rel_l2;
  const std::vector<double> ref = pr.reference();
  for_each_candidate(*g, [&](const std::string& algo) {
    pr.c.poison();
    db.poison();
    g->run(nullptr, o);
    expect_close(pr.c.host(), ref, tol, "weight gradient " + algo);
    expect_close(db.host(), ref_db, tol, "bias gradient " + algo);
  });
}

INSTANTIATE_TEST_SUITE_P(Precisions, GemmEpilogue,
                         ::testing::Values(k::Precision::bf16, k::Precision::fp16,
                                           k::Precision::fp32),
                         [](const auto& info) { return std::string(to_string(info.param)); });

TEST_F(GemmGpu, VariantsAddCandidatesThatAreAllCorrect) {
  for (k::Precision p : {k::Precision::bf16, k::Precision::tf32}) {
    k::GemmDesc d = desc(p, "NN", 512, 384, 256);
    Problem pr(d);
    k::GemmOptions with;
    with.variants = true;
    k::Gemm ranked(d), all(d, with);
    EXPECT_GT(all.candidates(), ranked.candidates()) << to_string(p);
    const double tol = xfbench::matmul::tolerance_for(dtype_of(p), d.k).rel_l2;
    const std::vector<double> ref = pr.reference();
    for_each_candidate(all, [&](const std::string& algo) {
      pr.c.poison();
      all.run(nullptr, pr.ops());
      expect_close(pr.c.host(), ref, tol, std::string(to_string(p)) + " " + algo);
    });
  }
}

TEST_F(GemmGpu, SearchPicksTheFastestAndStaysCorrect) {
  k::GemmDesc d = desc(k::Precision::bf16, "NN", 1024, 1024, 1024);
  Problem pr(d);
  k::Gemm g(d);
  ASSERT_GE(g.candidates(), 1);
  EXPECT_FALSE(g.tuned());
  k::GemmTuneResult r = g.tune(nullptr, pr.ops());
  EXPECT_TRUE(g.tuned());
  ASSERT_EQ(int(r.seconds.size()), g.candidates());
  // Which candidate wins is a timing matter (a benchmark's business, not a test's): check only that
  // the search measured the winner and selected it.
  ASSERT_GE(r.best, 0);
  ASSERT_LT(r.best, g.candidates());
  EXPECT_GT(r.seconds[std::size_t(r.best)], 0.0);
  EXPECT_TRUE(std::isfinite(r.seconds[std::size_t(r.best)]));
  EXPECT_EQ(g.selected(), r.best);
  EXPECT_NE(g.algo_info().label().find("algo="), std::string::npos);
  pr.c.poison();
  g.run(nullptr, pr.ops());
  expect_close(pr.c.host(), pr.reference(), 1e-2, "tuned " + g.algo_info().label());
  EXPECT_THROW(g.select(g.candidates()), xfbench::InvalidArgument);
  // The same with a confirmation from idle (runs only when a challenger wins the final).
  k::Gemm h(d);
  k::GemmTuneOptions from_idle;
  from_idle.idle_ms = 5;
  const int best = h.tune(nullptr, pr.ops(), from_idle).best;
  EXPECT_EQ(h.selected(), best);
  pr.c.poison();
  h.run(nullptr, pr.ops());
  expect_close(pr.c.host(), pr.reference(), 1e-2, "tuned from idle " + h.algo_info().label());
  // And with the steady final (long runs after an untimed lead-in of each finalist).
  k::Gemm f(d);
  k::GemmTuneOptions steady;
  steady.final_ms = 5;
  const int chosen = f.tune(nullptr, pr.ops(), steady).best;
  EXPECT_EQ(f.selected(), chosen);
  pr.c.poison();
  f.run(nullptr, pr.ops());
  expect_close(pr.c.host(), pr.reference(), 1e-2, "tuned, steady final " + f.algo_info().label());
}

TEST_F(GemmGpu, PlansAreCachedAndRunsCheckTheirArguments) {
  k::GemmDesc d = desc(k::Precision::fp16, "NT", 128, 128, 128);
  k::Gemm& a = k::gemm_plan(d);
  EXPECT_EQ(&a, &k::gemm_plan(d));
  k::GemmDesc other = d;
  other.epilogue = k::Epilogue::bias;
  EXPECT_NE(&a, &k::gemm_plan(other));
  Problem pr(d);
  k::GemmOperands o = pr.ops();
  o.a = static_cast<const char*>(o.a) + 2;  // not 256-byte aligned
  EXPECT_THROW(a.run(nullptr, o), xfbench::InvalidArgument);
  k::GemmOperands no_bias = pr.ops();
  EXPECT_THROW(k::gemm_plan(other).run(nullptr, no_bias), xfbench::InvalidArgument);
  k::GemmDesc bad = d;
  bad.k = 0;
  EXPECT_THROW(k::Gemm{bad}, xfbench::InvalidArgument);
  k::clear_gemm_plans();
}

// A case that clears the plans (to measure its own memory) keeps the searches done before it:
// the rebuilt plan starts searched, on the same candidate; an unsearched one stays unsearched.
// XFBENCH_GEMM_LOG=1: each search says what it chose, one stderr line; nothing without it.
TEST_F(GemmGpu, SearchesLogTheirChoiceOnRequest) {
  const std::string args =
      "--xfbench_suite=all --benchmark_filter='^Matmul/bf16/NN/m:512/n:512/k:512/' "
      "--benchmark_min_time=0.01";
  xftest::HostResult r = xftest::run_host(args, "XFBENCH_GEMM_LOG=1");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("xfbench gemm search: bf16 NN m=512 n=512 k=512"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(" -> algo="), std::string::npos) << r.err;
  xftest::HostResult quiet = xftest::run_host(args);
  EXPECT_EQ(quiet.code, 0) << quiet.err;
  EXPECT_EQ(quiet.err.find("xfbench gemm search"), std::string::npos) << quiet.err;
}

// XFBENCH_GEMM_PLANS=file: the first run searches and writes each choice there; the second finds
// them and searches nothing, so both run the same kernels; a malformed file fails the GEMM cases
// with the file and line, and the host says so in its exit code.
TEST_F(GemmGpu, PlansFileCarriesTheSearchesToTheNextRun) {
  const std::string path = "/tmp/xftest_gemm_plans_" + std::to_string(::getpid()) + ".tsv";
  std::remove(path.c_str());
  const std::string args =
      "--xfbench_suite=all --benchmark_filter='^Matmul/(bf16|fp16)/NN/m:512/n:512/k:512/' "
      "--benchmark_min_time=0.01";
  const std::string env = "XFBENCH_GEMM_LOG=1 XFBENCH_GEMM_PLANS=" + path;
  xftest::HostResult first = xftest::run_host(args, env);
  EXPECT_EQ(first.code, 0) << first.err;
  EXPECT_NE(first.err.find("xfbench gemm search: fp16 NN m=512 n=512 k=512"), std::string::npos)
      << first.err;
  const std::string text = xftest::slurp(path);
  EXPECT_NE(text.find("\talgo="), std::string::npos) << text;
  xftest::HostResult second = xftest::run_host(args, env);
  EXPECT_EQ(second.code, 0) << second.err;
  EXPECT_EQ(second.err.find("xfbench gemm search:"), std::string::npos) << second.err;
  const std::string from = "xfbench gemm plan from " + path + ": ";
  for (const char* dtype : {"bf16", "fp16"}) {
    const std::string product = std::string(dtype) + " NN m=512 n=512 k=512";
    const std::size_t at = second.err.find(from + product);
    ASSERT_NE(at, std::string::npos) << second.err;
    const std::size_t searched = first.err.find("xfbench gemm search: " + product);
    ASSERT_NE(searched, std::string::npos) << first.err;
    // What follows " -> " on a line: the kernel (the product's own words, out=f16 and the like,
    // come before it).
    const auto kernel = [](const std::string& err, std::size_t from) {
      const std::string line = err.substr(from, err.find('\n', from) - from);
      return line.substr(line.find(" -> ") + 4);
    };
    EXPECT_EQ(kernel(second.err, at), kernel(first.err, searched))
        << "the first run chose another kernel than the second ran\n"
        << first.err << second.err;
  }
  {
    std::ofstream bad(path, std::ios::app);
    bad << "not a record\n";
  }
  xftest::HostResult broken = xftest::run_host(args, env);
  EXPECT_NE(broken.code, 0) << broken.err;
  EXPECT_NE((broken.out + broken.err).find(path + ", line "), std::string::npos)
      << broken.out << broken.err;
  std::remove(path.c_str());
}

TEST_F(GemmGpu, SearchesOutliveClearedPlans) {
  k::GemmDesc d = desc(k::Precision::bf16, "NN", 512, 768, 256);
  k::GemmOptions wide;
  wide.heuristics = 8;
  Problem pr(d);
  k::Gemm& a = k::gemm_plan(d, wide);
  ASSERT_FALSE(a.tuned());
  a.tune(nullptr, pr.ops());
  const int chosen = a.selected();
  k::GemmDesc other = desc(k::Precision::bf16, "NN", 512, 768, 320);
  EXPECT_FALSE(k::gemm_plan(other, wide).tuned());
  k::clear_gemm_plans();
  k::Gemm& b = k::gemm_plan(d, wide);
  EXPECT_TRUE(b.tuned());
  EXPECT_EQ(b.selected(), chosen);
  EXPECT_FALSE(k::gemm_plan(other, wide).tuned());
  EXPECT_FALSE(k::gemm_plan(d).tuned()) << "other options, another plan";
  pr.c.poison();
  b.run(nullptr, pr.ops());
  expect_close(pr.c.host(), pr.reference(), 1e-2, "rebuilt " + b.algo_info().label());
  k::clear_gemm_plans();
}

TEST_F(GemmGpu, SampledReferenceAndChecksAgreeWithTheCpu) {
  for (k::Precision p : {k::Precision::fp32, k::Precision::bf16, k::Precision::fp8}) {
    if (p == k::Precision::fp8 && !has_fp8()) continue;
    k::GemmDesc d = desc(p, p == k::Precision::fp8 ? "NT" : "TN", 48, 64, 80);
    d.batch = 3;
    Problem pr(d);
    std::vector<k::GemmSample> s = {{0, 0, 0}, {2, 47, 63}, {1, 5, 17}, {2, 30, 0}};
    xfbench::DeviceBuffer<k::GemmSample> ds(s.size());
    xfbench::DeviceBuffer<double> ref(s.size()), got(s.size());
    ASSERT_EQ(cudaMemcpy(ds.data(), s.data(), ds.bytes(), cudaMemcpyHostToDevice), cudaSuccess);
    k::gemm_reference_at(nullptr, d, pr.a.mem.get(), pr.b.mem.get(), ds.data(), int(s.size()),
                         ref.data());
    k::Gemm(d).run(nullptr, pr.ops());
    k::gemm_gather_at(nullptr, d, pr.c.mem.get(), ds.data(), int(s.size()), got.data());
    std::vector<double> h_ref(s.size()), h_got(s.size());
    ASSERT_EQ(cudaMemcpy(h_ref.data(), ref.data(), ref.bytes(), cudaMemcpyDeviceToHost),
              cudaSuccess);
    ASSERT_EQ(cudaMemcpy(h_got.data(), got.data(), got.bytes(), cudaMemcpyDeviceToHost),
              cudaSuccess);
    std::vector<double> cpu = pr.reference(), c = pr.c.host();
    for (std::size_t i = 0; i < s.size(); ++i) {
      std::size_t at = std::size_t(s[i].batch * d.c_stride() + s[i].row * d.c_ld() + s[i].col);
      EXPECT_NEAR(h_ref[i], cpu[at], 1e-9 * (1 + std::fabs(cpu[at]))) << to_string(p) << " " << i;
      EXPECT_EQ(h_got[i], c[at]) << to_string(p) << " " << i;
    }
  }
  // Non-finite counting: a poisoned buffer with a filled prefix.
  for (k::ElemType t : {k::ElemType::f32, k::ElemType::f16, k::ElemType::bf16, k::ElemType::e4m3}) {
    Mat m(t, 1000);
    m.poison();
    xfbench::fill_uniform(m.mem.get(), 600, xfbench::matmul::fill_type(t), 5, -1, 1, nullptr);
    xfbench::DeviceBuffer<unsigned long long> n(1);
    ASSERT_EQ(cudaMemset(n.data(), 0, n.bytes()), cudaSuccess);
    k::count_nonfinite(nullptr, t, m.mem.get(), m.count, n.data());
    unsigned long long h = 0;
    ASSERT_EQ(cudaMemcpy(&h, n.data(), sizeof h, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(h, 400u) << to_string(t);
  }
}
