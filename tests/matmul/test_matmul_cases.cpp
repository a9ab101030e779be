// Matmul without a GPU: shape lists, case names and selection, FLOP counting, tolerances, and the
// host's answer to a bad shape list.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <random>
#include <set>
#include <sstream>

#include "kernels/gemm.hpp"
#include "matmul_cases.hpp"
#include "test_paths.hpp"
#include "xfbench/error.hpp"

namespace mm = xfbench::matmul;
namespace k = xfbench::kernels;
using xfbench::Dtype;

TEST(MatmulShapes, ParsesGoodLists) {
  auto s = mm::parse_shapes("4096x2048x1024,16x512x512x64");
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].m, 4096);
  EXPECT_EQ(s[0].n, 2048);
  EXPECT_EQ(s[0].k, 1024);
  EXPECT_EQ(s[0].batch, 1);
  EXPECT_EQ(s[1].batch, 16);
  EXPECT_EQ(s[1].m, 512);
  EXPECT_EQ(s[1].n, 512);
  EXPECT_EQ(s[1].k, 64);
}

TEST(MatmulShapes, RejectsBadListsWithTheReason) {
  for (const char* bad :
       {"", "4096x4096", "1x2x3x4x5", "4096xx4096x1", "axbxc", "0x1x1", "-1x2x3", "1x2x3,",
        ",1x2x3", "1x2x3,,4x5x6", " 1x2x3", "1X2X3", "99999999999999999999x1x1", "16777217x1x1"}) {
    try {
      mm::parse_shapes(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const xfbench::InvalidArgument& e) {
      EXPECT_NE(std::string(e.message()).find("shape"), std::string::npos) << e.message();
    }
  }
}

TEST(MatmulShapes, Layouts) {
  EXPECT_EQ(mm::parse_layout("NT").name(), "NT");
  EXPECT_TRUE(mm::parse_layout("TN").trans_a);
  EXPECT_FALSE(mm::parse_layout("TN").trans_b);
  EXPECT_THROW(mm::parse_layout("TT"), xfbench::InvalidArgument);
  EXPECT_THROW(mm::parse_layout("nn"), xfbench::InvalidArgument);
}

// The kernels' precisions beside the SDK's dtypes: names shared both ways; what a layer stores
// (fp8: bf16 tensors, its products' operands apart); the element the matmul fills.
TEST(Precision, OneVocabularyWithTheDtypes) {
  for (Dtype t : {Dtype::fp64, Dtype::fp32, Dtype::tf32, Dtype::fp16, Dtype::bf16, Dtype::fp8}) {
    EXPECT_EQ(k::dtype_of(k::precision_of(t)), t);
    EXPECT_STREQ(k::to_string(k::precision_of(t)), xfbench::to_string(t));
    EXPECT_EQ(k::input_type(k::precision_of(t)), xfbench::element_of(t));
    EXPECT_EQ(mm::fill_type(xfbench::element_of(t)), t == Dtype::tf32 ? Dtype::fp32 : t);
  }
  EXPECT_EQ(k::storage_dtype(k::Precision::fp8), Dtype::bf16);
  EXPECT_EQ(k::storage_type(k::Precision::fp8), xfbench::ElemType::bf16);
  EXPECT_EQ(k::storage_dtype(k::Precision::tf32), Dtype::tf32);
  EXPECT_EQ(k::storage_type(k::Precision::tf32), xfbench::ElemType::f32);
  EXPECT_EQ(k::storage_type(k::Precision::fp16), xfbench::ElemType::f16);
}

TEST(MatmulCases, NamesAreStableAndParseable) {
  mm::CaseSpec c;
  c.dtype = Dtype::bf16;
  c.shape = {8192, 8192, 8192};
  EXPECT_EQ(c.name(), "Matmul/bf16/NN/m:8192/n:8192/k:8192");
  c.layout = {false, true};
  c.model = "bert-large", c.gemm = "attn_scores";
  c.shape = {512, 512, 64, 1024};
  EXPECT_EQ(c.name(),
            "Matmul/bf16/NT/model:bert-large/gemm:attn_scores/batch:1024/m:512/n:512/k:64");
  mm::CaseSpec s;
  s.sweep = true, s.dtype = Dtype::fp8, s.layout = {false, true}, s.shape = {6144, 12288, 4096};
  EXPECT_EQ(s.name(), "Matmul/sweep/fp8/NT/m:6144/n:12288/k:4096");
}

TEST(MatmulCases, DefaultSelection) {
  auto cases = mm::select_cases({});
  std::set<std::string> names;
  for (const auto& c : cases) EXPECT_TRUE(names.insert(c.name()).second) << c.name();
  // Every dtype's squares; fp32 stops at 8192; fp8 runs NT.
  for (const char* n :
       {"Matmul/fp32/NN/m:8192/n:8192/k:8192", "Matmul/tf32/NN/m:16384/n:16384/k:16384",
        "Matmul/fp16/NN/m:128/n:128/k:128", "Matmul/bf16/NN/m:16384/n:16384/k:16384",
        "Matmul/fp8/NT/m:2048/n:2048/k:2048", "Matmul/bf16/TN/m:4096/n:4096/k:4096",
        "Matmul/fp16/NT/m:8192/n:8192/k:8192",
        "Matmul/fp16/NT/model:bert-large/gemm:qkv/m:32768/n:3072/k:1024",
        "Matmul/bf16/NT/model:bert-large/gemm:ffn_down/m:16384/n:1024/k:4096",
        "Matmul/bf16/NN/model:bert-large/gemm:attn_context/batch:2048/m:128/n:64/k:128",
        "Matmul/fp16/NT/model:gpt2-medium/gemm:lm_head/m:32768/n:50257/k:1024",
        "Matmul/bf16/NT/model:t5-large/gemm:lm_head/m:16384/n:32128/k:1024"}) {
    EXPECT_TRUE(names.count(n)) << n;
  }
  EXPECT_FALSE(names.count("Matmul/fp32/NN/m:16384/n:16384/k:16384"));
  EXPECT_FALSE(names.count("Matmul/fp8/NN/m:2048/n:2048/k:2048"));
  EXPECT_EQ(cases.size(), 29u + 8u + 36u);
  for (const auto& c : cases) EXPECT_FALSE(c.sweep);
}

TEST(MatmulCases, FlagsNarrowAndWiden) {
  mm::Selection sel;
  sel.dtypes = {Dtype::tf32};
  sel.layouts = {mm::parse_layout("TN")};
  auto cases = mm::select_cases(sel);
  ASSERT_EQ(cases.size(), 6u);  // tf32 TN squares; no model GEMM is TN
  for (const auto& c : cases) EXPECT_EQ(c.name().rfind("Matmul/tf32/TN/", 0), 0u) << c.name();

  sel = {};
  sel.shapes = mm::parse_shapes("100x200x300");
  sel.dtypes = {Dtype::fp16, Dtype::fp8};
  cases = mm::select_cases(sel);
  ASSERT_EQ(cases.size(), 2u);
  EXPECT_EQ(cases[0].name(), "Matmul/fp16/NN/m:100/n:200/k:300");
  EXPECT_EQ(cases[1].name(), "Matmul/fp8/NT/m:100/n:200/k:300");

  sel = {};
  sel.shapes = mm::parse_shapes("64x64x64");
  sel.sweep_dtypes = {Dtype::bf16};
  sel.sweep_m = {4096, 8192};
  sel.sweep_n = {8192};
  sel.sweep_k = {2048, 4096, 8192};
  cases = mm::select_cases(sel);
  EXPECT_EQ(cases.size(), 5u + 6u);  // 5 dtypes of the user shape, 2x1x3 sweep
  EXPECT_EQ(cases.back().name(), "Matmul/sweep/bf16/NT/m:8192/n:8192/k:8192");
}

// Fast accumulation computes another (less exact) product: the fp8 names say so, the others are
// untouched by it.
TEST(MatmulCases, FastAccumulationIsInTheFp8Names) {
  mm::Selection sel;
  sel.shapes = mm::parse_shapes("100x200x300");
  sel.dtypes = {Dtype::bf16, Dtype::fp8};
  sel.sweep_dtypes = {Dtype::fp8};
  sel.sweep_m = sel.sweep_n = sel.sweep_k = {4096};
  sel.fp8_fast_accum = true;
  auto cases = mm::select_cases(sel);
  ASSERT_EQ(cases.size(), 3u);
  EXPECT_EQ(cases[0].name(), "Matmul/bf16/NN/m:100/n:200/k:300");
  EXPECT_FALSE(cases[0].fp8_fast_accum);
  EXPECT_EQ(cases[1].name(), "Matmul/fp8/NT/accum:fast/m:100/n:200/k:300");
  EXPECT_TRUE(cases[1].fp8_fast_accum);
  EXPECT_EQ(cases[2].name(), "Matmul/sweep/fp8/NT/accum:fast/m:4096/n:4096/k:4096");
  EXPECT_TRUE(cases[2].fp8_fast_accum);
  sel.fp8_fast_accum = false;
  EXPECT_EQ(mm::select_cases(sel)[1].name(), "Matmul/fp8/NT/m:100/n:200/k:300");
}

TEST(MatmulCases, ModelGemmsFollowTheModels) {
  auto g = mm::model_gemms(Dtype::fp16, 64, 512);
  ASSERT_EQ(g.size(), 9u);
  const auto& qkv = g[0];
  EXPECT_EQ(qkv.shape.m, 64 * 512);
  EXPECT_EQ(qkv.shape.n, 3 * 1024);
  EXPECT_EQ(qkv.shape.k, 1024);
  const auto& scores = g[4];  // Q·Kᵀ per (batch, head)
  EXPECT_EQ(scores.gemm, "attn_scores");
  EXPECT_EQ(scores.shape.batch, 64 * 16);
  EXPECT_EQ(scores.shape.m, 512);
  EXPECT_EQ(scores.shape.n, 512);
  EXPECT_EQ(scores.shape.k, 64);
  EXPECT_EQ(g[6].shape.n, 50257);
  EXPECT_EQ(g[7].shape.n, 50304);
  EXPECT_EQ(g[8].shape.n, 32128);
}

TEST(MatmulFlops, TwoMnkPerBatchItem) {
  k::GemmDesc d;
  d.m = 8192, d.n = 8192, d.k = 8192;
  EXPECT_DOUBLE_EQ(k::gemm_flops(d), 2.0 * 8192.0 * 8192.0 * 8192.0);
  d.m = 3, d.n = 5, d.k = 7, d.batch = 11;
  EXPECT_DOUBLE_EQ(k::gemm_flops(d), 2.0 * 3 * 5 * 7 * 11);
  d.precision = k::Precision::bf16;
  EXPECT_DOUBLE_EQ(k::gemm_bytes(d), 11.0 * (3 * 7 + 7 * 5 + 3 * 5) * 2);
  d.precision = k::Precision::fp8;  // e4m3 in, bf16 out
  EXPECT_DOUBLE_EQ(k::gemm_bytes(d), 11.0 * ((3 * 7 + 7 * 5) * 1 + 3 * 5 * 2));
  // 8192³ in 1 ms is 1099.5 TFLOP/s.
  d = {};
  d.m = d.n = d.k = 8192;
  EXPECT_NEAR(k::gemm_flops(d) / 1e-3 / 1e12, 1099.5, 0.1);
}

TEST(MatmulFlops, ElementCountsFollowLayoutsAndStrides) {
  k::GemmDesc d;
  d.m = 4, d.n = 6, d.k = 5;
  EXPECT_EQ(k::a_elements(d), 20u);
  EXPECT_EQ(k::b_elements(d), 30u);
  EXPECT_EQ(k::c_elements(d), 24u);
  d.trans_a = true, d.lda = 8;  // A stored [k=5, m=4] with pitch 8
  EXPECT_EQ(k::a_elements(d), std::size_t(4 * 8 + 4));
  d.batch = 3, d.stride_c = 100;
  EXPECT_EQ(k::c_elements(d), std::size_t(2 * 100 + 3 * 6 + 6));
  EXPECT_EQ(d.layout(), "TN");
}

// Tolerances against simulated rounding: what the output types do passes, a wrong product fails.
namespace {
double round_to_bits(double x, int mantissa_bits) {
  if (x == 0) return 0;
  int e;
  double f = std::frexp(x, &e);
  double scale = std::ldexp(1.0, mantissa_bits + 1);
  return std::ldexp(std::nearbyint(f * scale) / scale, e);
}
double rel_l2_of_rounding(int bits, std::int64_t k, std::vector<double>* ref_out = nullptr) {
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> ref, got;
  for (int i = 0; i < 256; ++i) {
    double s = 0;
    for (std::int64_t j = 0; j < k; ++j) s += u(rng) * u(rng);
    ref.push_back(s);
    got.push_back(round_to_bits(s, bits));
  }
  if (ref_out) *ref_out = ref;
  return xfbench::compare(got, ref).rel_l2_error;
}
}  // namespace

TEST(MatmulTolerance, RoundingPassesWrongResultsFail) {
  // bf16 keeps 7 stored mantissa bits, fp16 10, fp32 23.
  for (std::int64_t kk : {64, 1024, 16384}) {
    EXPECT_LT(rel_l2_of_rounding(7, kk), mm::tolerance_for(Dtype::bf16, kk).rel_l2 / 3);
    EXPECT_LT(rel_l2_of_rounding(10, kk), mm::tolerance_for(Dtype::fp16, kk).rel_l2 / 3);
    EXPECT_LT(rel_l2_of_rounding(23, kk), mm::tolerance_for(Dtype::fp32, kk).rel_l2 / 3);
    // Rounding to a coarser type than the tolerance is for must fail.
    EXPECT_GT(rel_l2_of_rounding(7, kk), mm::tolerance_for(Dtype::fp16, kk).rel_l2);
    EXPECT_GT(rel_l2_of_rounding(10, kk), mm::tolerance_for(Dtype::fp32, kk).rel_l2);
    EXPECT_GT(rel_l2_of_rounding(2, kk), mm::tolerance_for(Dtype::fp8, kk).rel_l2);
  }
  // A result off by one term of k (e.g. an index slip) fails every dtype.
  std::vector<double> ref;
  rel_l2_of_rounding(23, 256, &ref);
  std::vector<double> wrong = ref;
  for (double& v : wrong) v += 0.3;
  for (Dtype d : {Dtype::fp32, Dtype::tf32, Dtype::fp16, Dtype::bf16, Dtype::fp8}) {
    EXPECT_FALSE(xfbench::within(xfbench::compare(wrong, ref), mm::tolerance_for(d, 256)))
        << xfbench::to_string(d);
  }
}

TEST(MatmulTolerance, OrderedByPrecisionAndGrowingWithK) {
  for (std::int64_t kk : {128, 4096, 16384}) {
    EXPECT_LT(mm::tolerance_for(Dtype::fp32, kk).rel_l2, mm::tolerance_for(Dtype::tf32, kk).rel_l2);
    EXPECT_LE(mm::tolerance_for(Dtype::fp16, kk).rel_l2, mm::tolerance_for(Dtype::bf16, kk).rel_l2);
    EXPECT_LE(mm::tolerance_for(Dtype::bf16, kk).rel_l2, mm::tolerance_for(Dtype::fp8, kk).rel_l2);
    EXPECT_LT(mm::tolerance_for(Dtype::fp32, kk).rel_l2, 3e-5);
  }
  EXPECT_LT(mm::tolerance_for(Dtype::fp32, 128).rel_l2,
            mm::tolerance_for(Dtype::fp32, 16384).rel_l2);
  EXPECT_LT(mm::tolerance_for(Dtype::fp8, 128).rel_l2, mm::tolerance_for(Dtype::fp8, 16384).rel_l2);
}

// The search's final choice: the incumbent unless a challenger is clearly and consistently faster.
TEST(MatmulSearch, ChallengerMustWinClearly) {
  const std::vector<double> base{1.00, 1.02, 0.99, 1.01, 1.00, 0.98, 1.01};
  auto scaled = [&](double f) {
    std::vector<double> v;
    for (double t : base) v.push_back(t * f);
    return v;
  };
  // 0.5% faster in every round: a near-tie, the incumbent stays.
  EXPECT_EQ(k::choose_by_rounds({base, scaled(0.995)}, 0, 6, 0.01), 0);
  // 3% faster in every round: the challenger.
  EXPECT_EQ(k::choose_by_rounds({base, scaled(0.97)}, 0, 6, 0.01), 1);
  // Works with the incumbent anywhere in the list.
  EXPECT_EQ(k::choose_by_rounds({scaled(0.97), base}, 1, 6, 0.01), 0);
  // 3% faster by median but slower in two rounds: not consistent enough.
  std::vector<double> lucky = scaled(0.97);
  lucky[1] = lucky[4] = 1.2;
  EXPECT_EQ(k::choose_by_rounds({base, lucky}, 0, 6, 0.01), 0);
  // One slower round is allowed.
  lucky[4] = 0.97;
  EXPECT_EQ(k::choose_by_rounds({base, lucky}, 0, 6, 0.01), 1);
  // Of two clear winners, the one clearly faster than the other...
  EXPECT_EQ(k::choose_by_rounds({base, scaled(0.97), scaled(0.95), scaled(1.1)}, 0, 6, 0.01), 2);
  EXPECT_EQ(k::choose_by_rounds({base, scaled(0.95), scaled(0.97), scaled(1.1)}, 0, 6, 0.01), 1);
  // ... and of two within the margin of each other the earlier in the list, whichever was luckier.
  EXPECT_EQ(k::choose_by_rounds({base, scaled(0.97), scaled(0.965)}, 0, 6, 0.01), 1);
  EXPECT_EQ(k::choose_by_rounds({base, scaled(0.965), scaled(0.97)}, 0, 6, 0.01), 1);
  // A challenger that failed to run (infinite times) or ran other rounds never wins.
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(k::choose_by_rounds({base, std::vector<double>(7, inf), {0.5, 0.5}}, 0, 6, 0.01), 0);
  EXPECT_THROW(k::choose_by_rounds({base}, 1, 6, 0.01), xfbench::InvalidArgument);
}

// The host, with no GPU visible: registration must not touch one, and a bad list exits 2.
namespace {
struct HostRun {
  int code = -1;
  std::string out, err;
};
HostRun host(const std::string& args) {
  std::string base = ::testing::TempDir() + "xfmatmul_" + std::to_string(std::rand());
  std::string cmd = "CUDA_VISIBLE_DEVICES= " + xftest::host_bin() + " " + args + " >" + base +
                    ".out 2>" + base + ".err";
  int status = std::system(cmd.c_str());
  auto slurp = [](const std::string& p) {
    std::ifstream f(p);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  };
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(base + ".out"), slurp(base + ".err")};
}
}  // namespace

TEST(MatmulHost, ListsCasesWithoutAGpu) {
  HostRun r = host("--benchmark_list_tests=true --benchmark_filter=Matmul/");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("Matmul/bf16/NN/m:8192/n:8192/k:8192"), std::string::npos) << r.out;
  r = host("--benchmark_list_tests=true --benchmark_filter=Matmul/ --xfbench_matmul_sweep=bf16");
  EXPECT_NE(r.out.find("Matmul/sweep/bf16/NT/m:8192/n:16384/k:8192"), std::string::npos);
}

TEST(MatmulHost, BadShapeListExitsTwoWithTheReason) {
  HostRun r = host("--benchmark_list_tests=true --xfbench_matmul_shapes=4096x4096");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("4096x4096"), std::string::npos) << r.err;
  r = host("--benchmark_list_tests=true --xfbench_matmul_layouts=XY");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("XY"), std::string::npos) << r.err;
  r = host("--benchmark_list_tests=true --xfbench_matmul_topk=0");
  EXPECT_EQ(r.code, 2);
}
