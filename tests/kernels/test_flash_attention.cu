// The flash attention kernels (wgmma and mma.sync) against the float64 reference with the unfused
// backend's exact dropout mask: forward and, on Hopper, backward, with padding and causal masks, a
// score bias and its gradient, and grouped-query; their block schedule and what they refuse.
// Helpers and tolerances: attention_test_util.hpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "attention_test_util.hpp"
#include "kernels/attention.hpp"
#include "kernels/detail/flash.cuh"  // BlockOrder, the flash kernels' block schedule
#include "test_util.hpp"

namespace xk = xfbench::kernels;
using namespace xftest;

namespace {

std::vector<char> device_bytes(const char* p, std::size_t n) {
  std::vector<char> h(n);
  XF_CUDA_CHECK(cudaMemcpy(h.data(), p, n, cudaMemcpyDeviceToHost));
  return h;
}

// With a bias, the backward's bias gradient too (its diagonal sums, against float64), and it is
// the same bit for bit when run again.
template <class T>
void check_flash(const Case& c, xk::FlashKernel kernel) {
  SCOPED_TRACE(c.str());
  Problem<T> pr(c);
  xk::FlashAttention attn(pr.desc, kernel);
  SCOPED_TRACE(attn.uses_wgmma() ? "wgmma" : "mma.sync");
  const xk::Dropout drop{c.p, 11, 3};
  const void* bias = c.bias ? pr.d_bias.get() : nullptr;
  xfbench::DeviceBuffer<float> lse(attn.stats_elements()), scratch(attn.scratch_elements());
  Dev<float> dbias(std::max<std::size_t>(attn.bias_grad_elements(), 1));  // poisoned
  // Bits the forward skips stay poisoned; a guard of 256 bytes after the last row must stay so.
  constexpr std::size_t kGuard = 256;
  xfbench::DeviceBuffer<char> keep(attn.keep_bytes() + kGuard);
  xfbench::poison(keep.data(), keep.bytes(), nullptr);
  const std::vector<char> guard = device_bytes(keep.data() + attn.keep_bytes(), kGuard);
  // Saved keep bits on one layout, drawn again by the backward on the other: both paths tested.
  const bool save_bits = pr.layout == xk::QkvLayout::bshd;
  const xk::FlashSaved saved{lse.data(), save_bits ? keep.data() : nullptr};
  attn.forward(pr.o.get(), saved, pr.ptr(0), pr.ptr(1), pr.ptr(2), pr.d_lens.data(), bias, drop,
               nullptr);
  EXPECT_EQ(device_bytes(keep.data() + attn.keep_bytes(), kGuard), guard)
      << "the forward wrote keep bits past the last row's";
  pr.reference(drop);
  if (!attn.has_backward()) {
    const auto& d = pr.desc;
    EXPECT_TRUE(
        close_scaled<T>("O", gather(pr.o.host(), 0, d.o, d.B, d.NH, d.Sq, d.HD), pr.r_o, 4));
    return;
  }
  auto backward = [&] {
    attn.backward(pr.grad(0), pr.grad(1), pr.grad(2), c.bias ? dbias.get() : nullptr,
                  scratch.data(), pr.d_dout.get(), pr.o.get(), saved, pr.ptr(0), pr.ptr(1),
                  pr.ptr(2), bias, drop, nullptr);
  };
  backward();
  pr.expect_matches_reference();
  if (!c.bias && !c.NKV) return;
  // Run again: the same gradients bit for bit (grouped dK, dV are fixed-order sums too).
  const auto grads = pr.dqkv.host();
  const auto first = dbias.host();
  if (c.bias)
    EXPECT_TRUE(close_scaled<T>("dbias diagonals", first, pr.bias_grad_diagonals(drop), 8));
  backward();
  if (c.bias) EXPECT_EQ(dbias.host(), first);
  EXPECT_EQ(pr.dqkv.host(), grads);
}

// The forward (and, where it runs, the backward: Hopper, no padding mask) against float64 with the
// exact Philox mask (the unfused backend's), including a query count that leaves the last 128-row
// block half empty, several key tiles, padding (key lengths 251, 227, 203, 179 of 256: partial
// tiles, and a skipped one) and causal masks; both kernels (on a Hopper GPU `best` is the wgmma
// one).
TYPED_TEST(Attention, FlashForwardMatchesReference) {
  for (auto kernel : {xk::FlashKernel::best, xk::FlashKernel::mma})
    for (auto layout : {xk::QkvLayout::bshd, xk::QkvLayout::sbhd}) {
      check_flash<TypeParam>({2, 3, 64, 64, layout, false, false, false, 0.f}, kernel);
      check_flash<TypeParam>({2, 2, 192, 64, layout, false, false, false, 0.1f}, kernel);
      check_flash<TypeParam>({1, 2, 256, 64, layout, false, false, false, 0.3f}, kernel);
      check_flash<TypeParam>({4, 2, 256, 64, layout, true, false, false, 0.1f}, kernel);
      check_flash<TypeParam>({2, 2, 256, 64, layout, false, true, false, 0.1f}, kernel);
      check_flash<TypeParam>({1, 3, 128, 64, layout, false, true, false, 0.f}, kernel);
    }
}

// A score bias (T5's relative position bias, here random), forward and backward, against float64
// with the exact Philox mask: T5's unscaled scores and the default scale, one to four key tiles
// (the diagonal sums carried between query tiles), B·NH = 75, the causal mask (T5's decoder),
// dropout on and off, and the padding mask (forward only: the backward does not take it). The
// mma.sync forward with the bias from global memory too.
TYPED_TEST(Attention, FlashBiasMatchesReference) {
  for (auto layout : {xk::QkvLayout::bshd, xk::QkvLayout::sbhd}) {
    check_flash<TypeParam>({2, 3, 64, 64, layout, false, false, true, 0.f}, xk::FlashKernel::best);
    check_flash<TypeParam>({2, 2, 192, 64, layout, false, false, true, 0.1f, 1.f},
                           xk::FlashKernel::best);
    check_flash<TypeParam>({1, 3, 256, 64, layout, false, true, true, 0.1f, 1.f},
                           xk::FlashKernel::best);
    check_flash<TypeParam>({3, 25, 128, 64, layout, false, true, true, 0.f}, xk::FlashKernel::best);
    check_flash<TypeParam>({2, 2, 256, 64, layout, false, false, true, 0.2f},
                           xk::FlashKernel::best);
    check_flash<TypeParam>({4, 2, 256, 64, layout, true, false, true, 0.1f, 1.f},
                           xk::FlashKernel::best);
    check_flash<TypeParam>({2, 2, 192, 64, layout, false, true, true, 0.1f, 1.f},
                           xk::FlashKernel::mma);
    check_flash<TypeParam>({4, 2, 256, 64, layout, true, false, true, 0.f}, xk::FlashKernel::mma);
  }
}

// T5-large's attention (16 heads, seq 512, scale 1, dropout 0.1) with its bias: the flash and
// unfused forwards agree (same Philox mask), and the bias moves the output.
TYPED_TEST(Attention, FlashBiasAgreesWithUnfused) {
  using T = TypeParam;
  const Case c{2, 16, 512, 64, xk::QkvLayout::bshd, false, false, true, 0.1f, 1.f};
  Problem<T> pr(c);
  xk::FlashAttention flash(pr.desc);
  xk::UnfusedAttention unfused(pr.desc);
  Dev<T> probs(unfused.probs_elements()), work(unfused.probs_elements()), o2(pr.o_n);
  const xk::Dropout drop{0.1f, 4321, 9};
  flash.forward(pr.o.get(), {}, pr.ptr(0), pr.ptr(1), pr.ptr(2), nullptr, pr.d_bias.get(), drop,
                nullptr);
  unfused.forward(o2.get(), probs.get(), work.get(), pr.ptr(0), pr.ptr(1), pr.ptr(2), nullptr,
                  pr.d_bias.get(), drop, nullptr);
  const auto a = pr.o.host();
  EXPECT_TRUE(close_scaled<T>("O flash vs unfused", a, o2.host(), 8));
  const Dev<T> other_bias(random_values<T>(pr.bias.size(), -1, 1, 33));
  flash.forward(pr.o.get(), {}, pr.ptr(0), pr.ptr(1), pr.ptr(2), nullptr, other_bias.get(), drop,
                nullptr);
  EXPECT_NE(pr.o.host(), a);
}

bool flash_backward_here() {
  auto d = xk::self_attention_desc(xk::Precision::fp16, 1, 1, 64, 64, xk::QkvLayout::bshd);
  d.causal = true;
  return xk::FlashAttention(d).has_backward();
}

// The causal backward against float64 with the exact mask, keep bits saved (bshd) and drawn
// again (sbhd): a single tile (S = 64), the diagonal inside 128-row forward blocks with 25 heads
// (B·NH = 75 and 50, no multiple of an SM count), many tiles (S = 512), no dropout, and 550
// heads of one tile (more than the tail of BlockOrder on an H100: heads one after the other too).
TYPED_TEST(Attention, FlashCausalBackwardMatchesReference) {
  if (!flash_backward_here()) GTEST_SKIP() << "the flash backward needs an sm_90a build on Hopper";
  for (auto layout : {xk::QkvLayout::bshd, xk::QkvLayout::sbhd}) {
    check_flash<TypeParam>({3, 1, 64, 64, layout, false, true, false, 0.1f}, xk::FlashKernel::best);
    check_flash<TypeParam>({3, 25, 128, 64, layout, false, true, false, 0.1f},
                           xk::FlashKernel::best);
    check_flash<TypeParam>({2, 25, 192, 64, layout, false, true, false, 0.2f},
                           xk::FlashKernel::best);
    check_flash<TypeParam>({1, 3, 512, 64, layout, false, true, false, 0.1f},
                           xk::FlashKernel::best);
    check_flash<TypeParam>({2, 2, 256, 64, layout, false, true, false, 0.f}, xk::FlashKernel::best);
    check_flash<TypeParam>({22, 25, 64, 64, layout, false, true, false, 0.1f},
                           xk::FlashKernel::best);
  }
}

// Grouped-query, forward (both kernels) and, where it runs, the backward, whose dK/dV blocks run
// through the query tiles of each head of their group (the double-buffered loads crossing from
// one head to the next): 4 query heads on 2 and on 1 K/V heads, causal and not, several query
// tiles, dropout with the exact mask, the padding mask (forward), a bias and its gradient, and 280
// K/V heads of one tile (past the tail of BlockOrder on an H100). Gradients are checked for being
// the same bit for bit when run again.
TYPED_TEST(Attention, FlashGqaMatchesReference) {
  const auto bshd = xk::QkvLayout::bshd;
  for (auto kernel : {xk::FlashKernel::best, xk::FlashKernel::mma}) {
    check_flash<TypeParam>({2, 4, 192, 64, bshd, false, false, false, 0.f, 0.f, 2}, kernel);
    check_flash<TypeParam>({1, 4, 256, 64, bshd, false, true, false, 0.f, 0.f, 1}, kernel);
    check_flash<TypeParam>({2, 4, 128, 64, bshd, false, false, false, 0.f, 0.f, 1}, kernel);
    check_flash<TypeParam>({2, 8, 192, 64, bshd, false, true, false, 0.1f, 0.f, 2}, kernel);
    check_flash<TypeParam>({2, 4, 256, 64, bshd, true, false, false, 0.1f, 0.f, 2}, kernel);
  }
  check_flash<TypeParam>({2, 6, 192, 64, bshd, false, true, true, 0.1f, 1.f, 2},
                         xk::FlashKernel::best);
  check_flash<TypeParam>({2, 4, 128, 64, bshd, false, false, true, 0.f, 0.f, 2},
                         xk::FlashKernel::best);
  check_flash<TypeParam>({70, 8, 64, 64, bshd, false, true, false, 0.1f, 0.f, 4},
                         xk::FlashKernel::best);
}

// Head dim 128 (the Hopper kernels: two 64-column panels a tile), forward and backward:
// grouped-query 4 query heads over 2 and over 1, causal and not, padding (forward only), dropout
// with the exact mask (saved bits on bshd, drawn again on sbhd), a half-empty last query block,
// both layouts; grouped dK, dV the same bits when run again. Where the sm_90a kernels cannot run
// the description is refused with the reason, and so is a score bias.
TYPED_TEST(Attention, FlashHeadDim128MatchesReference) {
  const auto bshd = xk::QkvLayout::bshd, sbhd = xk::QkvLayout::sbhd;
  auto d = xk::self_attention_desc(xk::Precision::bf16, 1, 2, 64, 128, bshd);
  try {
    const xk::FlashAttention probe(d);
    EXPECT_TRUE(probe.has_backward());
  } catch (const xfbench::Unsupported& e) {
    EXPECT_NE(e.message().find("head dim 128 takes the Hopper kernel"), std::string::npos)
        << e.message();
    GTEST_SKIP() << e.message();
  }
  d.bias = true;
  EXPECT_THROW(xk::FlashAttention{d}, xfbench::Unsupported);
  check_flash<TypeParam>({2, 4, 192, 128, bshd, false, false, false, 0.f, 0.f, 2},
                         xk::FlashKernel::best);
  check_flash<TypeParam>({1, 4, 256, 128, bshd, false, true, false, 0.1f, 0.f, 1},
                         xk::FlashKernel::best);
  check_flash<TypeParam>({2, 8, 512, 128, bshd, false, true, false, 0.f, 0.f, 2},
                         xk::FlashKernel::best);
  check_flash<TypeParam>({4, 2, 256, 128, sbhd, true, false, false, 0.1f}, xk::FlashKernel::best);
  check_flash<TypeParam>({2, 3, 128, 128, sbhd, false, true, false, 0.f}, xk::FlashKernel::best);
  check_flash<TypeParam>({2, 2, 256, 128, sbhd, false, false, false, 0.1f}, xk::FlashKernel::best);
  // The forward takes keys in tiles of 128: a last tile of 64 keys (an odd multiple of 64), alone,
  // under the causal mask with dropout, and beside the padding mask.
  check_flash<TypeParam>({1, 4, 64, 128, bshd, false, false, false, 0.f, 0.f, 2},
                         xk::FlashKernel::best);
  check_flash<TypeParam>({2, 4, 192, 128, bshd, false, true, false, 0.1f, 0.f, 1},
                         xk::FlashKernel::best);
  check_flash<TypeParam>({2, 4, 320, 128, bshd, true, false, false, 0.1f, 0.f, 2},
                         xk::FlashKernel::best);
}

// The head-dim-128 forward that overlaps a key tile's softmax with the next tile's products, its
// warpgroups in ping-pong on mbarriers, does the lockstep kernel's arithmetic in the same order: O,
// the row statistics and the dropout keep bits bit for bit, at one key tile (the loop never runs),
// a ragged last tile with padding and dropout, and causal grouped-query over eight tiles.
TYPED_TEST(Attention, FlashOverlapForwardIsTheLockstepOneBitForBit) {
  using T = TypeParam;
  const auto bshd = xk::QkvLayout::bshd;
  for (const Case& c : {Case{1, 4, 64, 128, bshd, false, false, false, 0.f, 0.f, 2},
                        Case{2, 4, 320, 128, bshd, true, false, false, 0.1f, 0.f, 2},
                        Case{2, 8, 1024, 128, bshd, false, true, false, 0.1f, 0.f, 2}}) {
    SCOPED_TRACE(c.str());
    Problem<T> pr(c);
    xk::FlashAttention overlap(pr.desc), lockstep(pr.desc, xk::FlashKernel::lockstep);
    if (!overlap.uses_wgmma()) GTEST_SKIP() << "no sm_90a kernel on this GPU";
    const xk::Dropout drop{c.p, 5, 9};
    auto forward = [&](const xk::FlashAttention& attn) {
      xfbench::DeviceBuffer<float> lse(attn.stats_elements());
      xfbench::DeviceBuffer<char> keep(std::max<std::size_t>(attn.keep_bytes(), 1));
      xfbench::poison(keep.data(), keep.bytes(), nullptr);
      attn.forward(pr.o.get(), {lse.data(), keep.data()}, pr.ptr(0), pr.ptr(1), pr.ptr(2),
                   pr.d_lens.data(), nullptr, drop, nullptr);
      return std::make_tuple(
          pr.o.host(),
          device_bytes(reinterpret_cast<char*>(lse.data()), lse.size() * sizeof(float)),
          device_bytes(keep.data(), keep.bytes()));
    };
    const auto a = forward(overlap), b = forward(lockstep);
    EXPECT_EQ(std::get<0>(a), std::get<0>(b)) << "O";
    EXPECT_EQ(std::get<1>(a), std::get<1>(b)) << "row statistics";
    EXPECT_EQ(std::get<2>(a), std::get<2>(b)) << "keep bits";
  }
}

// Causality, exactly: a query sees no later key, so new queries, keys, values and output
// gradients at positions >= cut leave O and dQ of the rows before it unchanged, and new queries
// and output gradients before the cut leave O, dK and dV from the cut on unchanged (hidden scores
// add exact zeros). cut = 100 falls inside a 64-row tile and a 128-row forward block. At head
// dims 64 and 128.
template <class T>
void check_causality(int head_dim) {
  SCOPED_TRACE("head dim " + std::to_string(head_dim));
  const int cut = 100;
  const Case c{2, 3, 256, head_dim, xk::QkvLayout::bshd, false, true, false, 0.1f};
  Problem<T> pr(c);
  const auto& d = pr.desc;
  const std::int64_t H = std::int64_t(d.NH) * d.HD;
  xk::FlashAttention attn(d);
  const xk::Dropout drop{c.p, 21, 4};
  xfbench::DeviceBuffer<float> lse(attn.stats_elements()), delta(attn.stats_elements());
  xfbench::DeviceBuffer<char> keep(attn.keep_bytes());
  struct Result {
    std::vector<double> o, dq, dk, dv;  // dense [B, NH, S, HD]
  };
  auto run = [&] {
    const Dev<T> qkv(pr.qkv), dout(pr.dout);
    const xk::FlashSaved saved{lse.data(), keep.data()};
    const T* in = qkv.get();
    attn.forward(pr.o.get(), saved, in + pr.off(0), in + pr.off(1), in + pr.off(2), nullptr, drop,
                 nullptr);
    attn.backward(pr.grad(0), pr.grad(1), pr.grad(2), delta.data(), dout.get(), pr.o.get(), saved,
                  in + pr.off(0), in + pr.off(1), in + pr.off(2), drop, nullptr);
    const auto g = pr.dqkv.host();
    return Result{gather(pr.o.host(), 0, d.o, d.B, d.NH, d.Sq, d.HD),
                  gather(g, pr.off(0), d.q, d.B, d.NH, d.Sq, d.HD),
                  gather(g, pr.off(1), d.k, d.B, d.NH, d.Sk, d.HD),
                  gather(g, pr.off(2), d.v, d.B, d.NH, d.Sk, d.HD)};
  };
  // New random values for positions [from, to) of the packed tokens' first `width` elements
  // (bshd: a token's row is [q | k | v], width H for Q alone, 3H for all three; dO rows are H).
  std::uint64_t seed = 40;
  auto redraw = [&](std::vector<double>& x, std::int64_t row, std::int64_t width, int from,
                    int to) {
    const auto fresh = random_values<T>(x.size(), -1, 1, ++seed);
    for (int b = 0; b < d.B; ++b)
      for (int i = from; i < to; ++i)
        for (std::int64_t e = 0; e < width; ++e) {
          const std::size_t at = (std::size_t(b) * d.Sq + i) * row + e;
          x[at] = fresh[at];
        }
  };
  // Elements of dense [B, NH, S, HD] rows in [from, to) that differ between a and b.
  auto differing = [&](const std::vector<double>& a, const std::vector<double>& b, int from,
                       int to) {
    std::size_t n = 0;
    for (int bh = 0; bh < d.B * d.NH; ++bh)
      for (int i = from; i < to; ++i)
        for (int e = 0; e < d.HD; ++e) {
          const std::size_t at = (std::size_t(bh) * d.Sq + i) * d.HD + e;
          n += a[at] != b[at];
        }
    return n;
  };
  const Result base = run();
  const std::size_t before = std::size_t(d.B) * d.NH * cut * d.HD;
  const std::size_t after = std::size_t(d.B) * d.NH * (d.Sq - cut) * d.HD;

  redraw(pr.qkv, 3 * H, 3 * H, cut, d.Sq);  // later queries, keys and values
  redraw(pr.dout, H, H, cut, d.Sq);
  const Result later = run();
  EXPECT_EQ(differing(base.o, later.o, 0, cut), 0u);
  EXPECT_EQ(differing(base.dq, later.dq, 0, cut), 0u);
  // The change reaches what may see it: most later outputs, and gradients of earlier keys.
  EXPECT_GT(differing(base.o, later.o, cut, d.Sq), after / 2);
  EXPECT_GT(differing(base.dk, later.dk, 0, cut), before / 2);
  EXPECT_GT(differing(base.dv, later.dv, 0, cut), before / 2);

  redraw(pr.qkv, 3 * H, H, 0, cut);  // earlier queries
  redraw(pr.dout, H, H, 0, cut);
  const Result earlier = run();
  EXPECT_EQ(differing(later.o, earlier.o, cut, d.Sq), 0u);
  EXPECT_EQ(differing(later.dk, earlier.dk, cut, d.Sq), 0u);
  EXPECT_EQ(differing(later.dv, earlier.dv, cut, d.Sq), 0u);
  EXPECT_GT(differing(later.dq, earlier.dq, 0, cut), before / 2);
  EXPECT_GT(differing(later.dk, earlier.dk, 0, cut), before / 2);
}

TYPED_TEST(Attention, FlashCausalIgnoresLaterPositions) {
  if (!flash_backward_here()) GTEST_SKIP() << "the flash backward needs an sm_90a build on Hopper";
  for (int head_dim : {64, 128}) check_causality<TypeParam>(head_dim);
}

// Every block gets a distinct (rank, head): heads one after the other, ranks in order, then the
// tail heads together with every head's rank r before any head's r + 1 (a tail of 25 of 75 heads,
// none, all of them, a single head).
TEST(Attention, FlashBlockOrderCoversEveryItemOnce) {
  using xk::detail::BlockOrder;
  for (const BlockOrder& order :
       {BlockOrder{32, 75, 25}, BlockOrder{8, 75, 0}, BlockOrder{8, 75, 75}, BlockOrder{2, 1, 1}}) {
    SCOPED_TRACE(testing::Message()
                 << "items " << order.items << " heads " << order.heads << " tail " << order.tail);
    std::vector<int> seen(std::size_t(order.blocks()), 0);
    const int first_tail_block = (order.heads - order.tail) * order.items;
    int last_rank = -1;
    for (int block = 0; block < order.blocks(); ++block) {
      int rank = -1, head = -1;
      order.locate(block, rank, head);
      ASSERT_TRUE(rank >= 0 && rank < order.items && head >= 0 && head < order.heads);
      ++seen[std::size_t(head) * order.items + rank];
      if (block < first_tail_block) {
        EXPECT_EQ(head, block / order.items);
        EXPECT_EQ(rank, block % order.items);
      } else {
        EXPECT_GE(head, order.heads - order.tail);
        if (block > first_tail_block) EXPECT_GE(rank, last_rank);
      }
      last_rank = rank;
    }
    EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), order.blocks());
  }
}

// The causal backward's schedule on an H100's 132 SMs, two or three blocks each: blocks start in
// index order on the first free slot, each taking its products (a dK/dV block of key tile n
// G·(T − n) tile pairs of 4, a dQ block T − n of 3, plus 4 for its start and end). With the tail
// the weights give, every grid ends within 2.5% of its work spread evenly; the old rule (two
// waves of blocks) ended 8-11% late where grouped-query attention makes the dK/dV blocks G times
// heavier (llama-3.2-1b s4096 b4, llama-3.1-8b s4096 b2, 3B s4096 b1), as good without groups.
TEST(Attention, FlashBlockOrderTailEndsTheGridOnTime) {
  using xk::detail::BlockOrder;
  struct Grid {
    int B, kv_heads, G, S, slots;
  };
  for (const Grid& g :
       {Grid{4, 8, 4, 4096, 396}, Grid{2, 8, 4, 4096, 264}, Grid{1, 8, 3, 4096, 264},
        Grid{4, 8, 4, 2048, 396}, Grid{64, 16, 1, 1024, 396}}) {
    SCOPED_TRACE(testing::Message() << "B " << g.B << " kv heads " << g.kv_heads << " G " << g.G
                                    << " S " << g.S << " slots " << g.slots);
    const int T = g.S / 64, items = T + g.G * T, heads = g.B * g.kv_heads;
    const BlockOrder order = xk::detail::block_order(items, heads, 8.0 / (7.0 * (T + 1)), g.slots);
    auto work = [&](int rank) {
      const int n = rank / (g.G + 1);
      return (rank % (g.G + 1) == 0 ? 4.0 * g.G * (T - n) : 3.0 * (T - n)) + 4.0;
    };
    std::vector<double> free_at(std::size_t(g.slots), 0.0);
    double total = 0;
    for (int block = 0; block < order.blocks(); ++block) {
      int rank = -1, head = -1;
      order.locate(block, rank, head);
      auto slot = std::min_element(free_at.begin(), free_at.end());
      *slot += work(rank);
      total += work(rank);
    }
    const double end = *std::max_element(free_at.begin(), free_at.end());
    EXPECT_LE(end, 1.025 * total / g.slots) << "tail " << order.tail << " of " << heads;
  }
  EXPECT_EQ(xk::detail::block_order(64, 32, 0.0, 396).tail, 0);       // even work: no tail
  EXPECT_EQ(xk::detail::block_order(64, 32, 0.5, 0).tail, 0);         // no device: no tail
  EXPECT_EQ(xk::detail::block_order(8, 512, 2.0 / 9, 264).tail, 88);  // 1.5 · 264 · 2/9
  EXPECT_EQ(xk::detail::block_order(8, 3, 2.0 / 9, 264).tail, 3);     // at most every head
}

// Same Dropout, same mask: the flash and unfused forwards agree with dropout on (bert-large heads).
TYPED_TEST(Attention, FlashAgreesWithUnfusedUnderDropout) {
  using T = TypeParam;
  const Case c{2, 16, 512, 64, xk::QkvLayout::bshd, false, false, false, 0.1f};
  Problem<T> pr(c);
  xk::FlashAttention flash(pr.desc), flash_mma(pr.desc, xk::FlashKernel::mma);
  xk::UnfusedAttention unfused(pr.desc);
  Dev<T> probs(unfused.probs_elements()), work(unfused.probs_elements()), o2(pr.o_n);
  const xk::Dropout drop{0.1f, 1234, 77};
  flash.forward(pr.o.get(), {}, pr.ptr(0), pr.ptr(1), pr.ptr(2), nullptr, drop, nullptr);
  unfused.forward(o2.get(), probs.get(), work.get(), pr.ptr(0), pr.ptr(1), pr.ptr(2), nullptr,
                  nullptr, drop, nullptr);
  const auto a = pr.o.host(), b = o2.host();
  EXPECT_TRUE(close_scaled<T>("O flash vs unfused", a, b, 8));  // each within 4 eps of exact
  flash_mma.forward(o2.get(), {}, pr.ptr(0), pr.ptr(1), pr.ptr(2), nullptr, drop, nullptr);
  EXPECT_TRUE(close_scaled<T>("O flash wgmma vs mma.sync", a, o2.host(), 8));
  // A different seed must change the output (the mask is really applied).
  flash.forward(pr.o.get(), {}, pr.ptr(0), pr.ptr(1), pr.ptr(2), nullptr, {0.1f, 1235, 77},
                nullptr);
  EXPECT_NE(pr.o.host(), a);
}

TEST(Attention, FlashRejectsWhatItCannotRun) {
  auto d = xk::self_attention_desc(xk::Precision::fp16, 2, 4, 128, 64, xk::QkvLayout::bshd);
  auto with = [&](auto edit) {
    auto e = d;
    edit(e);
    return e;
  };
  EXPECT_THROW(xk::FlashAttention(with([](auto& e) { e.HD = 96; })), xfbench::Unsupported);
  // head dim 128: the Hopper kernels alone, without a bias
  EXPECT_THROW(xk::FlashAttention(with([](auto& e) { e.HD = 128, e.bias = true; })),
               xfbench::Unsupported);
  if (!xk::FlashAttention(d).uses_wgmma())
    EXPECT_THROW(xk::FlashAttention(with([](auto& e) { e.HD = 128; })), xfbench::Unsupported);
  else
    EXPECT_TRUE(xk::FlashAttention(with([](auto& e) { e.HD = 128; })).has_backward());
  EXPECT_THROW(xk::FlashAttention(with([](auto& e) { e.Sq = e.Sk = 100; })), xfbench::Unsupported);
  EXPECT_THROW(xk::FlashAttention(with([](auto& e) { e.dropout = 1.f; })),
               xfbench::InvalidArgument);
  EXPECT_NO_THROW(xk::FlashAttention{d});
  // What a caller allocates for training: statistics per row, one keep bit per score.
  auto dropped = with([](auto& e) { e.dropout = 0.1f; });
  EXPECT_EQ(xk::FlashAttention(dropped).stats_elements(), 2u * 4 * 128);
  EXPECT_EQ(xk::FlashAttention(dropped).keep_bytes(), 2u * 4 * 128 * 128 / 8);
  EXPECT_EQ(xk::FlashAttention(d).keep_bytes(), 0u);
  // The backward takes the causal mask (on Hopper), not the padding mask.
  const xk::FlashAttention causal(with([](auto& e) { e.causal = true; }));
  EXPECT_EQ(causal.has_backward(), causal.uses_wgmma());
  EXPECT_FALSE(xk::FlashAttention(with([](auto& e) { e.padding_mask = true; })).has_backward());
  // A bias: its gradient's diagonal sums, per-block sums in the scratch; the bias pointer must
  // come exactly with desc.bias (checked before any launch).
  const xk::FlashAttention biased(with([](auto& e) { e.bias = true; }));
  EXPECT_EQ(biased.bias_grad_elements(), 4u * (128 + 128 - 1));
  EXPECT_EQ(biased.scratch_elements(), 2u * 4 * 128 + 2u * 4 * 2 * 3 * 68);
  EXPECT_EQ(xk::FlashAttention(d).scratch_elements(), 2u * 4 * 128);
  EXPECT_EQ(xk::FlashAttention(d).bias_grad_elements(), 0u);
  alignas(16) static char tensor[16];  // never read: the checks come first
  void* p = tensor;
  EXPECT_THROW(biased.forward(p, {}, p, p, p, nullptr, {}, nullptr), xfbench::InvalidArgument);
  EXPECT_THROW(xk::FlashAttention(d).forward(p, {}, p, p, p, nullptr, p, {}, nullptr),
               xfbench::InvalidArgument);
}

}  // namespace
