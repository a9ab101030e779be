// T5's relative position bias (HF T5Attention): a learned table [num_buckets, heads] read as
// bias[h, i, j] = table[bucket(j - i), h], for query i and key j. The bucket is HF's
// _relative_position_bucket: bidirectional (encoder) gives the upper half of the buckets to keys
// after the query; causal (decoder) sees only distances to earlier keys (a later key is bucket 0).
// Within a half, distances below max_exact = half / 2 have their own bucket, larger ones share
// log-spaced buckets up to max_distance, clamped to the last bucket.
//
// HF computes the log bucket in float32 (torch.log of relative_position.float() / max_exact,
// divided by the float32-cast math.log(max_distance / max_exact), truncated by .to(torch.long)),
// and the same float32 steps are taken here: distances 16, 32 and 64 of the default encoder lie
// exactly on a bucket edge in real numbers, so their bucket is whatever that rounding gives.
#pragma once

#include <vector>

namespace xfbench::kernels {

int t5_relative_position_bucket(int relative_position, bool bidirectional, int num_buckets = 32,
                                int max_distance = 128);

// Float64 CPU references (tests): the bias [heads, sq, sk] from table [num_buckets, heads], and the
// table's gradient [num_buckets, heads] from dbias [heads, sq, sk] (summed over the batch by the
// caller), accumulated in (h, i, j) order so the result is deterministic.
std::vector<double> t5_bias_reference(const std::vector<double>& table, int heads, int sq, int sk,
                                      bool bidirectional, int num_buckets = 32,
                                      int max_distance = 128);
std::vector<double> t5_bias_table_grad_reference(const std::vector<double>& dbias, int heads,
                                                 int sq, int sk, bool bidirectional,
                                                 int num_buckets = 32, int max_distance = 128);

}  // namespace xfbench::kernels
