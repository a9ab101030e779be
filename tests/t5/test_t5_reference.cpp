// The float64 T5 block reference (kernels/models/reference/transformer_block_ref.hpp) checked
// against itself: every gradient it returns (input, encoder states, weights, norm weights, the
// relative bias table) equals the central difference of L = <out, dout> at sampled elements, for
// the encoder and the decoder, ReLU and gated-GELU FFNs. The GPU block is validated against this
// reference.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kernels/models/reference/transformer_block_ref.hpp"

namespace xfbench::kernels {
namespace {

using ref::Tensors;

// T5 at toy widths; seq 24 reaches the log-spaced buckets (distances >= 8 both ways).
BlockConfig toy_t5(bool decoder, bool gated) {
  BlockConfig c = t5_block(16, 2, 8, 24, decoder, gated);
  c.set_dropout(0.f);
  c.batch = 2, c.seq = 24;
  return c;
}

Tensors inputs(const BlockConfig& c) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  auto random = [&](std::size_t n, double scale, double offset = 0.0) {
    std::vector<double> v(n);
    for (double& x : v) x = offset + scale * u(rng);
    return v;
  };
  const std::size_t T = c.tokens(), H = c.hidden, I = c.intermediate, A = H;
  Tensors in;
  in["x"] = random(T * H, 1.0);
  in["dout"] = random(T * H, 1.0);
  in["wqkv"] = random(3 * A * H, 0.4);
  in["wo"] = random(H * A, 0.4);
  in["ln1_w"] = random(H, 0.1, 1.0);
  in["ln2_w"] = random(H, 0.1, 1.0);
  in["wi"] = random((c.gated_ffn ? 2 : 1) * I * H, 0.4);
  in["wout"] = random(H * I, 0.3);
  in["rel_bias"] = random(32 * std::size_t(c.heads), 1.0);
  if (c.cross_attention) {
    in["enc"] = random(T * H, 1.0);
    in["wq_cross"] = random(A * H, 0.4);
    in["wkv_cross"] = random(2 * A * H, 0.4);
    in["wo_cross"] = random(H * A, 0.4);
    in["ln_cross_w"] = random(H, 0.1, 1.0);
  }
  return in;
}

double loss(const BlockConfig& c, const Tensors& in) {
  Tensors out;
  ref::transformer_block(c, BlockPart::layer, in, false, out);
  double l = 0;
  const std::vector<double>& y = out.at("out");
  for (std::size_t i = 0; i < y.size(); ++i) l += y[i] * in.at("dout")[i];
  return l;
}

void check_gradients(const BlockConfig& c) {
  Tensors in = inputs(c);
  Tensors grads;
  ref::transformer_block(c, BlockPart::layer, in, true, grads);
  std::mt19937_64 rng(9);
  int checked = 0;
  for (auto& [name, values] : in) {
    if (name == "dout") continue;
    const std::string gname = name == "x" ? "dx" : name == "enc" ? "denc" : "d" + name;
    ASSERT_EQ(grads.count(gname), 1u) << gname;
    const std::vector<double>& g = grads.at(gname);
    ASSERT_EQ(g.size(), values.size()) << gname;
    for (int k = 0; k < 6; ++k) {
      const std::size_t i = rng() % values.size();
      const double h = 1e-5, saved = values[i];
      values[i] = saved + h;
      const double up = loss(c, in);
      values[i] = saved - h;
      const double down = loss(c, in);
      values[i] = saved;
      const double numeric = (up - down) / (2 * h);
      EXPECT_NEAR(g[i], numeric, 1e-6 * (1 + std::abs(numeric))) << gname << "[" << i << "]";
      ++checked;
    }
  }
  // A gradient for every input and parameter and nothing else: out, dx, d<param> (and denc).
  EXPECT_EQ(grads.size(), in.size());  // "out" stands in for "dout"
  EXPECT_GT(checked, 40);
}

TEST(T5Reference, EncoderGradientsAreFiniteDifferences) { check_gradients(toy_t5(false, false)); }
TEST(T5Reference, DecoderGradientsAreFiniteDifferences) { check_gradients(toy_t5(true, false)); }
TEST(T5Reference, GatedGeluGradientsAreFiniteDifferences) { check_gradients(toy_t5(false, true)); }

// The decoder's self-attention is causal: changing a later token leaves earlier outputs alone,
// while the encoder's bidirectional attention lets it reach them.
TEST(T5Reference, DecoderIsCausalEncoderIsNot) {
  for (bool decoder : {false, true}) {
    const BlockConfig c = toy_t5(decoder, false);
    Tensors in = inputs(c), a, b;
    ref::transformer_block(c, BlockPart::layer, in, false, a);
    in["x"][std::size_t(c.seq - 1) * c.hidden] += 0.5;  // batch 0, last token
    ref::transformer_block(c, BlockPart::layer, in, false, b);
    double earlier = 0;
    for (std::size_t i = 0; i < std::size_t(c.seq - 1) * c.hidden; ++i)
      earlier = std::max(earlier, std::abs(a["out"][i] - b["out"][i]));
    if (decoder)
      EXPECT_EQ(earlier, 0.0);
    else
      EXPECT_GT(earlier, 1e-4);
  }
}

}  // namespace
}  // namespace xfbench::kernels
