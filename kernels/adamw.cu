// AdamW, fused and unfused (see adamw.hpp). Not implemented yet.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <utility>

#include "kernels/adamw.hpp"
#include "xfbench/error.hpp"

namespace xfbench::kernels {

AdamWPlan::AdamWPlan(std::vector<ParamSegment> segments) : segments_(std::move(segments)) {
  for (const ParamSegment& s : segments_) {
    total_ = std::max(total_, s.offset + s.count);
    largest_ = std::max(largest_, s.count);
  }
}
AdamWPlan::~AdamWPlan() {}
AdamWPlan::AdamWPlan(AdamWPlan&& o) noexcept
    : segments_(std::move(o.segments_)),
      total_(o.total_),
      largest_(o.largest_),
      pieces_(std::exchange(o.pieces_, nullptr)),
      num_pieces_(o.num_pieces_) {}
AdamWPlan& AdamWPlan::operator=(AdamWPlan&& o) noexcept {
  std::swap(segments_, o.segments_);
  std::swap(total_, o.total_);
  std::swap(largest_, o.largest_);
  std::swap(pieces_, o.pieces_);
  std::swap(num_pieces_, o.num_pieces_);
  return *this;
}

template <class T>
void adamw_init_master(float*, const T*, std::size_t, cudaStream_t) {
  XF_THROW(Unsupported, "adamw_init_master: not implemented yet");
}
template <class T>
void adamw_fused(T*, float*, float*, float*, const T*, const AdamWPlan&, const AdamWConfig&,
                 const TrainScalars*, cudaStream_t) {
  XF_THROW(Unsupported, "adamw_fused: not implemented yet");
}
std::size_t adamw_unfused_scratch_bytes(const AdamWPlan& plan) { return 8 * plan.largest(); }
template <class T>
void adamw_unfused(T*, float*, float*, float*, const T*, void*, const AdamWPlan&,
                   const AdamWConfig&, const TrainScalars*, cudaStream_t) {
  XF_THROW(Unsupported, "adamw_unfused: not implemented yet");
}

#define XF_INSTANTIATE(T)                                                                       \
  template void adamw_init_master<T>(float*, const T*, std::size_t, cudaStream_t);              \
  template void adamw_fused<T>(T*, float*, float*, float*, const T*, const AdamWPlan&,          \
                               const AdamWConfig&, const TrainScalars*, cudaStream_t);          \
  template void adamw_unfused<T>(T*, float*, float*, float*, const T*, void*, const AdamWPlan&, \
                                 const AdamWConfig&, const TrainScalars*, cudaStream_t);
XF_INSTANTIATE(__half)
XF_INSTANTIATE(__nv_bfloat16)
XF_INSTANTIATE(float)
#undef XF_INSTANTIATE

}  // namespace xfbench::kernels
