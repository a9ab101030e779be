// T5 relative position buckets bit for bit against HF's float32 formula, and the float64 bias
// references: forward gathers the table, backward is its exact adjoint.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/relative_position.hpp"
#include "t5/expected_buckets.hpp"
#include "xfbench/error.hpp"

namespace xfbench::kernels {
namespace {

TEST(T5RelativePosition, BucketsMatchHuggingFace) {
  for (const t5_test::BucketCases& cases : t5_test::kBucketCases) {
    for (int k = 0; k < t5_test::kPositions; ++k) {
      const int rp = t5_test::kFirstPosition + k;
      ASSERT_EQ(t5_relative_position_bucket(rp, cases.bidirectional, cases.num_buckets,
                                            cases.max_distance),
                cases.bucket[k])
          << "relative position " << rp << (cases.bidirectional ? " bidirectional" : " causal")
          << " num_buckets " << cases.num_buckets << " max_distance " << cases.max_distance;
    }
  }
}

TEST(T5RelativePosition, DefaultsAreHuggingFaceDefaults) {
  const t5_test::BucketCases& encoder = t5_test::kBucketCases[0];
  ASSERT_TRUE(encoder.bidirectional && encoder.num_buckets == 32 && encoder.max_distance == 128);
  for (int k = 0; k < t5_test::kPositions; ++k)
    ASSERT_EQ(t5_relative_position_bucket(t5_test::kFirstPosition + k, true), encoder.bucket[k]);
}

// The distances where float32 rounding decides the bucket (exactly on an edge in real numbers).
TEST(T5RelativePosition, EncoderBucketEdges) {
  EXPECT_EQ(t5_relative_position_bucket(15, true), 16 + 9);
  EXPECT_EQ(t5_relative_position_bucket(16, true), 16 + 10);
  EXPECT_EQ(t5_relative_position_bucket(-32, true), 12);
  EXPECT_EQ(t5_relative_position_bucket(-63, true), 13);
  EXPECT_EQ(t5_relative_position_bucket(-64, true), 14);
  EXPECT_EQ(t5_relative_position_bucket(100000, true), 31);
}

TEST(T5RelativePosition, CausalPutsEveryFutureKeyInBucketZero) {
  for (int num_buckets : {32, 20})
    for (int rp = 0; rp <= 1000; ++rp)
      ASSERT_EQ(t5_relative_position_bucket(rp, false, num_buckets, 50), 0) << rp;
  const int sq = 40, sk = 50, heads = 2, num_buckets = 32;
  std::vector<double> table(num_buckets * heads);
  for (size_t n = 0; n < table.size(); ++n) table[n] = 1.0 + static_cast<double>(n);
  const std::vector<double> bias = t5_bias_reference(table, heads, sq, sk, false);
  for (int h = 0; h < heads; ++h)
    for (int i = 0; i < sq; ++i)
      for (int j = i; j < sk; ++j)
        ASSERT_EQ(bias[(h * sq + i) * sk + j], table[h]) << i << "," << j;
}

TEST(T5RelativePosition, RejectsTooFewBuckets) {
  EXPECT_THROW(t5_relative_position_bucket(5, true, 2, 128), InvalidArgument);
  EXPECT_THROW(t5_relative_position_bucket(5, false, 32, 16), InvalidArgument);
  EXPECT_THROW(t5_bias_reference(std::vector<double>(31), 1, 4, 4, true), InvalidArgument);
}

// Bias gathers table[bucket(j - i), h]; the table gradient of sum(bias * g) is the scatter of g,
// checked against a direct sum and by the adjoint identity <bias(t), g> = <t, dtable(g)>.
TEST(T5RelativePosition, BiasAndTableGradientRoundTrip) {
  std::mt19937_64 rng(17);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  const int heads = 3, num_buckets = 32;
  for (bool bidirectional : {true, false}) {
    for (auto [sq, sk] : {std::pair{1, 300}, std::pair{200, 200}, std::pair{7, 160}}) {
      std::vector<double> table(num_buckets * heads), g(static_cast<size_t>(heads) * sq * sk);
      for (double& t : table) t = uniform(rng);
      for (double& x : g) x = uniform(rng);
      const std::vector<double> bias = t5_bias_reference(table, heads, sq, sk, bidirectional);
      const std::vector<double> dtable =
          t5_bias_table_grad_reference(g, heads, sq, sk, bidirectional);
      std::vector<double> expected(num_buckets * heads, 0.0);
      double bias_dot_g = 0.0;
      for (int h = 0; h < heads; ++h)
        for (int i = 0; i < sq; ++i)
          for (int j = 0; j < sk; ++j) {
            const size_t at = (static_cast<size_t>(h) * sq + i) * sk + j;
            const int b = t5_relative_position_bucket(j - i, bidirectional);
            ASSERT_EQ(bias[at], table[b * heads + h]);
            expected[b * heads + h] += g[at];
            bias_dot_g += bias[at] * g[at];
          }
      double table_dot_dtable = 0.0;
      for (size_t n = 0; n < table.size(); ++n) {
        ASSERT_EQ(dtable[n], expected[n]) << "bucket " << n / heads << " head " << n % heads;
        table_dot_dtable += table[n] * dtable[n];
      }
      EXPECT_NEAR(bias_dot_g, table_dot_dtable, 1e-9 * (1.0 + std::abs(bias_dot_g)));
    }
  }
}

}  // namespace
}  // namespace xfbench::kernels
