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
//
// On the GPU (RelativePositionBias, relative_position.cu) the bucket of every diagonal j - i is
// computed once on the host by the same function and uploaded, so both sides agree bit for bit.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
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

// The bias of one shape on the GPU, built from the table each step, and the table's gradient.
// Storage T = __half, __nv_bfloat16 or float, sums in fp32. sk % 8 == 0, sq + sk - 1 <= 12288.
class RelativePositionBias {
 public:
  // Computes and uploads the buckets (outside timed regions). Throws InvalidArgument on a bad shape
  // or bucket setting.
  RelativePositionBias(int heads, int sq, int sk, bool bidirectional, int num_buckets = 32,
                       int max_distance = 128);
  ~RelativePositionBias();
  RelativePositionBias(const RelativePositionBias&) = delete;
  RelativePositionBias& operator=(const RelativePositionBias&) = delete;

  std::size_t bias_elements() const;   // heads · sq · sk
  std::size_t table_elements() const;  // num_buckets · heads
  std::size_t scratch_bytes() const;   // what backward() needs

  // bias [heads, sq, sk] = table [num_buckets, heads] gathered at bucket(j - i) (16-byte aligned).
  template <class T>
  void forward(T* bias, const T* table, cudaStream_t stream) const;
  // dtable[k, h] = sum of dbias[h, i, j] over every (i, j) with bucket(j - i) = k: each diagonal
  // summed in row chunks, the chunks and then a bucket's diagonals added in a fixed order, so the
  // result is bitwise reproducible (no atomics). dbias is already summed over the batch.
  template <class T>
  void backward(T* dtable, const T* dbias, void* scratch, cudaStream_t stream) const;
  // The same from the bias gradient already summed along each diagonal: fp32 [heads, sq + sk - 1],
  // [h, j - i + sq - 1] (what FlashAttention's backward returns).
  template <class T>
  void backward_from_diagonals(T* dtable, const float* diagonals, cudaStream_t stream) const;

 private:
  int heads_, sq_, sk_, num_buckets_;
  int* buckets_ = nullptr;  // device [sq + sk - 1]: bucket of diagonal j - i + sq - 1
};

}  // namespace xfbench::kernels
