#include "kernels/relative_position.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include "xfbench/error.hpp"

namespace xfbench::kernels {

int t5_relative_position_bucket(int relative_position, bool bidirectional, int num_buckets,
                                int max_distance) {
  // Per direction: half the buckets each way when bidirectional, all of them when causal.
  const int direction_buckets = bidirectional ? num_buckets / 2 : num_buckets;
  const int max_exact = direction_buckets / 2;
  XF_REQUIRE(max_exact > 0 && max_distance > max_exact,
             "T5 relative position bucket: num_buckets " + std::to_string(num_buckets) +
                 " and max_distance " + std::to_string(max_distance) +
                 " leave no log-spaced range (need num_buckets >= " +
                 std::to_string(bidirectional ? 4 : 2) + " and max_distance > " +
                 std::to_string(max_exact) + ")");
  int bucket = 0;
  int distance = -std::min(relative_position, 0);
  if (bidirectional) {
    if (relative_position > 0) bucket = direction_buckets;
    distance = std::abs(relative_position);
  }
  if (distance < max_exact) return bucket + distance;
  // Float32 step by step as torch does it (see the header); Python's scalar log is double.
  const float scaled = static_cast<float>(distance) / static_cast<float>(max_exact);
  const float log_range =
      static_cast<float>(std::log(static_cast<double>(max_distance) / max_exact));
  const float log_bucket =
      std::log(scaled) / log_range * static_cast<float>(direction_buckets - max_exact);
  const int large = max_exact + static_cast<int>(log_bucket);
  return bucket + std::min(large, direction_buckets - 1);
}

namespace {

// bucket(j - i) for every (i, j) of an [sq, sk] grid.
std::vector<int> bucket_grid(int sq, int sk, bool bidirectional, int num_buckets,
                             int max_distance) {
  std::vector<int> buckets(static_cast<size_t>(sq) * sk);
  for (int i = 0; i < sq; ++i)
    for (int j = 0; j < sk; ++j)
      buckets[static_cast<size_t>(i) * sk + j] =
          t5_relative_position_bucket(j - i, bidirectional, num_buckets, max_distance);
  return buckets;
}

void require_size(const std::vector<double>& v, size_t expected, const char* what) {
  XF_REQUIRE(v.size() == expected, std::string("T5 relative position reference: ") + what +
                                       " has " + std::to_string(v.size()) + " elements, expected " +
                                       std::to_string(expected));
}

}  // namespace

std::vector<double> t5_bias_reference(const std::vector<double>& table, int heads, int sq, int sk,
                                      bool bidirectional, int num_buckets, int max_distance) {
  require_size(table, static_cast<size_t>(num_buckets) * heads, "table [num_buckets, heads]");
  const std::vector<int> buckets = bucket_grid(sq, sk, bidirectional, num_buckets, max_distance);
  std::vector<double> bias(static_cast<size_t>(heads) * buckets.size());
  for (int h = 0; h < heads; ++h)
    for (size_t ij = 0; ij < buckets.size(); ++ij)
      bias[h * buckets.size() + ij] = table[static_cast<size_t>(buckets[ij]) * heads + h];
  return bias;
}

std::vector<double> t5_bias_table_grad_reference(const std::vector<double>& dbias, int heads,
                                                 int sq, int sk, bool bidirectional,
                                                 int num_buckets, int max_distance) {
  const std::vector<int> buckets = bucket_grid(sq, sk, bidirectional, num_buckets, max_distance);
  require_size(dbias, static_cast<size_t>(heads) * buckets.size(), "dbias [heads, sq, sk]");
  std::vector<double> dtable(static_cast<size_t>(num_buckets) * heads, 0.0);
  for (int h = 0; h < heads; ++h)
    for (size_t ij = 0; ij < buckets.size(); ++ij)
      dtable[static_cast<size_t>(buckets[ij]) * heads + h] += dbias[h * buckets.size() + ij];
  return dtable;
}

}  // namespace xfbench::kernels
