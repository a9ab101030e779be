// Gradient norm, clipping, loss scaling and AdamW against float64 references:
//  - the global norm (odd sizes: the tail past the last pack), the clip coefficient, the gradient
//    multiplier with a loss scale, the non-finite flag and GradScaler's backoff / growth rule;
//  - AdamW fused and unfused over segments with unaligned offsets and sizes, with and without
//    decay, one segment of tiny gradients (eps's place matters there), 3 steps with clipping:
//    both give the same bits, and match torch.optim.AdamW's formula in float64; a step with an
//    inf gradient is skipped by both and not counted.
//
// Tolerances: norm 1e-5 relative (fp32 sums); master weights 1e-6 absolute + 1e-6 relative
// (updates are lr-sized, 1e-2; a coupled weight decay or eps inside the sqrt moves them by
// 1e-4 or more); moments 16 fp32 units relative + 16 units of max|ref| absolute (m = 0.9 m +
// 0.1 g cancels); model weights: one ulp of T (2 u: the master's rounding may fall either way)
// + 1e-6.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "kernels/adamw.hpp"
#include "kernels/grad_norm.hpp"
#include "kernels/reference/train_ref.hpp"
#include "train_test_util.hpp"

namespace xk = xfbench::kernels;
using namespace xftest;

namespace {

template <class T>
class Optimizer : public GpuTest {};
using Types = ::testing::Types<__half, __nv_bfloat16, float>;
TYPED_TEST_SUITE(Optimizer, Types);

xk::TrainScalars read(const xk::TrainScalars* d) {
  xk::TrainScalars h{};
  XF_CUDA_CHECK(cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost));
  return h;
}

struct Norm {
  xfbench::DeviceBuffer<xk::TrainScalars> scalars{1};
  xfbench::DeviceBuffer<char> scratch{xk::grad_norm_scratch_bytes()};
  float* partials() { return reinterpret_cast<float*>(scratch.data()); }
};

TYPED_TEST(Optimizer, GradNormAndClip) {
  using T = TypeParam;
  for (std::size_t n : {std::size_t(1), std::size_t(1000003), std::size_t(1) << 22}) {
    SCOPED_TRACE("n=" + std::to_string(n));
    const auto g = random_values<T>(n, -1, 1, n);
    const double norm = xk::ref::global_norm(g.data(), n);
    Dev<T> d_g(g);
    Norm s;
    xk::train_scalars_init(s.scalars.data(), {}, nullptr);
    xk::grad_norm_clip<T>(s.scalars.data(), s.partials(), d_g.get(), n, float(norm / 2), {},
                          nullptr);
    auto h = read(s.scalars.data());
    EXPECT_NEAR(h.grad_norm, norm, 1e-5 * norm);
    EXPECT_NEAR(h.clip_coef, float(norm / 2) / (norm + 1e-6), 1e-5);
    EXPECT_EQ(h.grad_mult, h.clip_coef);
    EXPECT_EQ(h.step, 1);
    EXPECT_EQ(h.nonfinite, 0);
    xk::grad_norm_clip<T>(s.scalars.data(), s.partials(), d_g.get(), n, float(norm * 2), {},
                          nullptr);  // below max_norm: no clipping
    auto h2 = read(s.scalars.data());
    EXPECT_EQ(h2.clip_coef, 1.f);
    EXPECT_EQ(h2.grad_norm, h.grad_norm);  // deterministic
    EXPECT_EQ(h2.step, 2);
  }
}

// The partial sums over a shard of pieces (ZeRO-2's chunks, out of order and with gaps) are the
// same bits as over a contiguous copy of that shard, and their sum is the shard's float64 norm;
// pieces that are not 8-aligned are rejected.
TYPED_TEST(Optimizer, GradNormOverPieces) {
  using T = TypeParam;
  const std::size_t n = std::size_t(1) << 20;
  const auto g = random_values<T>(n, -1, 1, 17);
  const std::vector<xk::GradPieces::Piece> pieces = {
      {600000, 200008}, {8, 1000}, {1024, 0}, {300000, 123456}, {900000, 96}};
  std::vector<double> shard;  // values of T (random_values), as the device copy holds them
  for (const auto& p : pieces)
    shard.insert(shard.end(), g.begin() + p.offset, g.begin() + p.offset + p.count);
  const xk::GradPieces table(pieces);
  ASSERT_EQ(table.elements(), shard.size());
  Dev<T> d_g(g), d_shard(shard);
  Norm a, b;
  xk::grad_norm_partials<T>(a.partials(), d_g.get(), table, nullptr);
  xk::grad_norm_partials<T>(b.partials(), d_shard.get(), shard.size(), nullptr);
  std::vector<float> pa(xk::grad_norm_scratch_bytes() / 4), pb(pa.size());
  XF_CUDA_CHECK(cudaMemcpy(pa.data(), a.partials(), pa.size() * 4, cudaMemcpyDeviceToHost));
  XF_CUDA_CHECK(cudaMemcpy(pb.data(), b.partials(), pb.size() * 4, cudaMemcpyDeviceToHost));
  EXPECT_EQ(std::memcmp(pa.data(), pb.data(), pa.size() * 4), 0);
  double sum = 0;
  for (float x : pa) sum += x;
  const double norm = xk::ref::global_norm(shard.data(), shard.size());
  EXPECT_NEAR(std::sqrt(sum), norm, 1e-5 * norm);
  EXPECT_THROW(xk::GradPieces({{4, 8}}), xfbench::InvalidArgument);
  EXPECT_THROW(xk::GradPieces({{8, 12}}), xfbench::InvalidArgument);
}

// fp16 dynamic loss scaling: the norm is the unscaled one; an inf halves S and is skipped; two
// finite steps with growth_interval 2 double S.
TEST(GradNormScaling, DynamicLossScale) {
  if (!xfbench::gpu_unavailable_reason().empty()) GTEST_SKIP();
  xfbench::select_device(0);
  const std::size_t n = 4096;
  const double S = 1024;
  auto g = random_values<__half>(n, -1, 1, 3);
  for (auto& x : g) x *= S;  // exact: a power of two
  const double norm = xk::ref::global_norm(g.data(), n) / S;
  Dev<__half> d_g(g);
  auto bad = g;
  bad[77] = INFINITY;
  Dev<__half> d_bad(bad);
  Norm s;
  xk::LossScaling rule;
  rule.dynamic = true;
  rule.init_scale = float(S);
  rule.growth_interval = 2;
  xk::train_scalars_init(s.scalars.data(), rule, nullptr);
  xk::grad_norm_clip<__half>(s.scalars.data(), s.partials(), d_g.get(), n, 1.f, rule, nullptr);
  auto h = read(s.scalars.data());
  EXPECT_NEAR(h.grad_norm, norm, 1e-5 * norm);
  EXPECT_NEAR(h.clip_coef, 1.0 / (norm + 1e-6), 1e-5 / norm);
  EXPECT_NEAR(h.grad_mult, h.clip_coef / S, 1e-9);
  EXPECT_EQ(h.loss_scale, float(S));
  EXPECT_EQ(h.good_steps, 1);
  xk::grad_norm_clip<__half>(s.scalars.data(), s.partials(), d_bad.get(), n, 1.f, rule, nullptr);
  h = read(s.scalars.data());
  EXPECT_EQ(h.nonfinite, 1);
  EXPECT_EQ(h.skipped, 1);
  EXPECT_EQ(h.step, 1);
  EXPECT_EQ(h.loss_scale, float(S / 2));
  for (int k = 0; k < 2; ++k)
    xk::grad_norm_clip<__half>(s.scalars.data(), s.partials(), d_g.get(), n, 0.f, rule, nullptr);
  h = read(s.scalars.data());
  EXPECT_EQ(h.nonfinite, 0);
  EXPECT_EQ(h.step, 3);
  EXPECT_EQ(h.loss_scale, float(S));  // grew back after two good steps
  EXPECT_EQ(h.good_steps, 0);
  EXPECT_EQ(h.clip_coef, 1.f);  // max_norm 0: no clipping
}

// Segments with unaligned offsets and sizes, a gap, one of tiny gradients; listed out of order.
std::vector<xk::ParamSegment> test_segments() {
  return {{5000, 4099, true}, {0, 1000, true},  {1003, 37, false},
          {1040, 3960, true}, {9100, 5, false}, {9105, 20000, false}};
}

template <class T>
struct OptState {
  Dev<float> master, m, v;
  Dev<T> params;
  OptState(const std::vector<double>& p0, std::size_t n)
      : master(p0), m(std::vector<double>(n, 0.0)), v(std::vector<double>(n, 0.0)), params(p0) {}
};

TYPED_TEST(Optimizer, AdamWFusedUnfusedAndReference) {
  using T = TypeParam;
  const xk::AdamWPlan plan(test_segments());
  const std::size_t n = plan.total();
  xk::AdamWConfig cfg;
  cfg.lr = 1e-2f;
  cfg.weight_decay = 0.1f;
  const float max_norm = 5.f;
  // Master weights start as T values (as a model initialised in T would).
  const auto p0 = random_values<T>(n, -1, 1, 1);
  OptState<T> fused(p0, n), unfused(p0, n);
  std::vector<double> r_p = p0, r_m(n, 0.0), r_v(n, 0.0);
  Norm s;
  xk::train_scalars_init(s.scalars.data(), {}, nullptr);
  xfbench::DeviceBuffer<char> scratch(xk::adamw_unfused_scratch_bytes(plan));
  for (int step = 1; step <= 4; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    auto g = random_values<T>(n, -1, 1, 100 + step);
    for (std::size_t i = 9105; i < 9105 + 20000; ++i)  // tiny gradients: sqrt(v) ~ eps
      g[i] = xftest::to_double(
          from_double<T>(g[i] * 1e-7 * (std::is_same<T, __half>::value ? 1e3 : 1)));
    const bool skip = step == 3;
    if (skip) g[17] = INFINITY;
    Dev<T> d_g(g);
    xk::grad_norm_clip<T>(s.scalars.data(), s.partials(), d_g.get(), n, max_norm, {}, nullptr);
    xk::adamw_fused<T>(fused.params.get(), fused.master.get(), fused.m.get(), fused.v.get(),
                       d_g.get(), plan, cfg, s.scalars.data(), nullptr);
    xk::adamw_unfused<T>(unfused.params.get(), unfused.master.get(), unfused.m.get(),
                         unfused.v.get(), d_g.get(), scratch.data(), plan, cfg, s.scalars.data(),
                         nullptr);
    const auto h = read(s.scalars.data());
    EXPECT_EQ(h.nonfinite, skip ? 1 : 0);
    if (!skip) {
      const double norm = xk::ref::global_norm(g.data(), n);
      const double mult = std::min(1.0, max_norm / (norm + 1e-6));
      for (const auto& seg : plan.segments()) {
        std::vector<double> gs(g.begin() + seg.offset, g.begin() + seg.offset + seg.count);
        for (auto& x : gs) x *= mult;
        xk::ref::adamw_step(r_p.data() + seg.offset, r_m.data() + seg.offset,
                            r_v.data() + seg.offset, gs.data(), seg.count, cfg, seg.decay, h.step);
      }
    }
    // Elements outside the segments (the gap 1000..1002) keep their initial values.
    const auto fm = fused.master.host(), um = unfused.master.host();
    ASSERT_TRUE(fm == um) << "fused and unfused master weights differ";
    ASSERT_TRUE(fused.m.host() == unfused.m.host());
    ASSERT_TRUE(fused.v.host() == unfused.v.host());
    ASSERT_TRUE(fused.params.host() == unfused.params.host());
    EXPECT_TRUE(close("master", fm, r_p, {1e-6, 1e-6}));
    EXPECT_TRUE(close_ulps<float>("m", fused.m.host(), r_m, 16));
    EXPECT_TRUE(close_ulps<float>("v", fused.v.host(), r_v, 16));
    std::vector<double> r_w(n);
    for (std::size_t i = 0; i < n; ++i) r_w[i] = xftest::to_double(from_double<T>(r_p[i]));
    EXPECT_TRUE(close("params", fused.params.host(), r_w, {1e-6, 2 * unit_roundoff<T>()}));
  }
  EXPECT_EQ(read(s.scalars.data()).step, 3);  // the skipped step is not counted
}

// Gradient accumulation (acc += g, rounded once) and the master copy (exact widening).
TYPED_TEST(Optimizer, AccumulateAndInitMaster) {
  using T = TypeParam;
  const std::size_t n = 4096 + 64;
  const auto a = random_values<T>(n, -1, 1, 7), g = random_values<T>(n, -1, 1, 8);
  Dev<T> acc(a), d_g(g);
  Dev<float> master(n);
  xk::grad_accumulate<T>(acc.get(), d_g.get(), n, nullptr);
  xk::adamw_init_master<T>(master.get(), d_g.get(), n, nullptr);
  std::vector<double> r(n);
  for (std::size_t i = 0; i < n; ++i) r[i] = a[i] + g[i];
  EXPECT_TRUE(close("acc", acc.host(), r, {0, unit_roundoff<T>()}));
  EXPECT_EQ(master.host(), g);
  EXPECT_THROW(xk::grad_accumulate<T>(acc.get(), d_g.get(), 13, nullptr), xfbench::InvalidArgument);
}

// fp32 steps may keep no separate model weights: params null updates the master alone.
TEST(AdamWArgs, Float32WithoutModelCopyAndBadInput) {
  if (!xfbench::gpu_unavailable_reason().empty()) GTEST_SKIP();
  xfbench::select_device(0);
  const xk::AdamWPlan plan({{0, 64, true}});
  Dev<float> master(random_values<float>(64, -1, 1, 1)), m(std::vector<double>(64, 0.0)),
      v(std::vector<double>(64, 0.0)), g(random_values<float>(64, -1, 1, 2));
  Norm s;
  xk::train_scalars_init(s.scalars.data(), {}, nullptr);
  xk::grad_norm_clip<float>(s.scalars.data(), s.partials(), g.get(), 64, 0.f, {}, nullptr);
  const auto before = master.host();
  xk::adamw_fused<float>(nullptr, master.get(), m.get(), v.get(), g.get(), plan, {},
                         s.scalars.data(), nullptr);
  EXPECT_NE(master.host(), before);
  EXPECT_THROW(xk::adamw_fused<__half>(nullptr, master.get(), m.get(), v.get(), nullptr, plan, {},
                                       s.scalars.data(), nullptr),
               xfbench::InvalidArgument);  // params and grads missing
  EXPECT_THROW(xk::AdamWPlan({{0, 10, true}, {5, 10, true}}), xfbench::InvalidArgument);
  xk::AdamWConfig bad;
  bad.beta2 = 1.f;
  EXPECT_THROW(xk::adamw_fused<float>(nullptr, master.get(), m.get(), v.get(), g.get(), plan, bad,
                                      s.scalars.data(), nullptr),
               xfbench::InvalidArgument);
}

}  // namespace
