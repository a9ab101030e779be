#include "parallel_plan.hpp"

#include <algorithm>
#include <string>

#include "xfbench/error.hpp"

namespace xfbench::train {

BucketPlan plan_buckets(const std::vector<std::size_t>& ready_offsets, std::size_t elements,
                        int ranks, std::size_t bucket_elements) {
  if (ranks < 1) XF_THROW(InvalidArgument, "bucket plan: ranks must be >= 1");
  if (ready_offsets.empty() || ready_offsets.back() != 0)
    XF_THROW(InvalidArgument, "bucket plan: the last ready offset must be 0");
  const std::size_t unit = 8 * std::size_t(ranks);
  BucketPlan plan;
  plan.ranks = ranks;
  plan.elements = elements;
  if (elements % unit)
    XF_THROW(InvalidArgument, "bucket plan: " + std::to_string(elements) +
                                  " elements do not split into " + std::to_string(ranks) +
                                  " 8-aligned shards");
  plan.shard_elements = elements / std::size_t(ranks);
  std::size_t end = elements;  // of the group before, and of the open bucket
  Bucket open{elements, elements, 0, 0, 0};
  for (std::size_t i = 0; i < ready_offsets.size(); ++i) {
    const std::size_t begin = ready_offsets[i];
    if (begin >= end)
      XF_THROW(InvalidArgument, "bucket plan: ready offsets must decrease, " +
                                    std::to_string(begin) + " after " + std::to_string(end));
    if ((end - begin) % unit)
      XF_THROW(InvalidArgument, "bucket plan: the group [" + std::to_string(begin) + ", " +
                                    std::to_string(end) + ") does not split into " +
                                    std::to_string(ranks) + " 8-aligned chunks");
    open.begin = begin;
    open.ready_point = int(i);
    end = begin;
    const bool last = i + 1 == ready_offsets.size();
    if (open.end - open.begin >= bucket_elements || last) {
      if (open.end > open.begin) plan.buckets.push_back(open);
      open = Bucket{begin, begin, 0, 0, 0};
    }
  }
  // Each rank keeps its chunks in the order of the flat buffer: the last bucket is the first.
  std::size_t offset = 0;
  for (auto b = plan.buckets.rbegin(); b != plan.buckets.rend(); ++b) {
    b->chunk = (b->end - b->begin) / std::size_t(ranks);
    b->shard_offset = offset;
    offset += b->chunk;
  }
  return plan;
}

namespace {

void check_rank(int rank, int ranks) {
  if (rank < 0 || rank >= ranks)
    XF_THROW(InvalidArgument,
             "bucket plan: rank " + std::to_string(rank) + " of " + std::to_string(ranks));
}

}  // namespace

std::size_t BucketPlan::chunk_begin(const Bucket& b, int rank) const {
  check_rank(rank, ranks);
  return b.begin + std::size_t(rank) * b.chunk;
}

std::vector<std::vector<kernels::ParamSegment>> BucketPlan::chunk_segments(
    const std::vector<kernels::ParamSegment>& params, int rank) const {
  check_rank(rank, ranks);
  std::vector<std::vector<kernels::ParamSegment>> out;
  for (const Bucket& b : buckets) {
    const std::size_t lo = chunk_begin(b, rank), hi = lo + b.chunk;
    std::vector<kernels::ParamSegment>& mine = out.emplace_back();
    for (const kernels::ParamSegment& p : params) {
      const std::size_t first = std::max(p.offset, lo), last = std::min(p.offset + p.count, hi);
      if (first < last) mine.push_back({first - lo, last - first, p.decay});
    }
  }
  return out;
}

std::vector<kernels::GradPieces::Piece> BucketPlan::shard_pieces(int rank) const {
  check_rank(rank, ranks);
  std::vector<kernels::GradPieces::Piece> out;
  for (auto b = buckets.rbegin(); b != buckets.rend(); ++b)  // shard_offset order
    out.push_back({chunk_begin(*b, rank), b->chunk});
  return out;
}

}  // namespace xfbench::train
