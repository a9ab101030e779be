// How a data-parallel step splits a model's flat gradient buffer
// (kernels/models/language_model.hpp): buckets that are reduced while the backward still runs, each
// made of whole parameter groups (the head, layers, the embeddings) in the order the backward
// finishes them, and with ZeRO-2 every rank's equal part of every bucket. Host arithmetic only
// (tested without a GPU).
//
//   flat buffer   | embeddings | layer 0 | layer 1 | ... | layer L-1 | head |
//   buckets       ready last <-----------------------------------  ready first
//   ZeRO-2        bucket [begin, end) of `ranks` chunks: rank r owns
//                 [begin + r·chunk, begin + (r+1)·chunk) of the flat buffers (reduce-scattered
//                 and all-gathered in place), its AdamW state at shard_offset of its shard
//                 buffers, which hold its chunks in the order of the flat buffer.
#pragma once

#include <cstddef>
#include <vector>

#include "kernels/adamw.hpp"
#include "kernels/grad_norm.hpp"

namespace xfbench::train {

struct Bucket {
  std::size_t begin = 0, end = 0;  // elements of the flat buffers
  int ready_point = 0;             // LanguageModel's gradient ready point that completes it
  std::size_t chunk = 0;           // (end - begin) / ranks: one rank's part
  std::size_t shard_offset = 0;    // where each rank keeps its part in its shard buffers
};

struct BucketPlan {
  int ranks = 1;
  std::size_t elements = 0;        // of the flat buffers
  std::size_t shard_elements = 0;  // elements / ranks
  std::vector<Bucket> buckets;     // in the order they become ready (from the end of the buffer)

  // ZeRO-2: where rank `rank`'s chunk of bucket b starts in the flat buffers.
  std::size_t chunk_begin(const Bucket& b, int rank) const;
  // The parameter segments (offsets into the flat buffers) cut to rank `rank`'s chunk of each
  // bucket (in the order of `buckets`), offsets from the chunk's start: the AdamW plan of each.
  std::vector<std::vector<kernels::ParamSegment>> chunk_segments(
      const std::vector<kernels::ParamSegment>& params, int rank) const;
  // Rank `rank`'s chunks as pieces of the flat buffers, in the order of its shard buffers.
  std::vector<kernels::GradPieces::Piece> shard_pieces(int rank) const;
};

// Buckets over a flat buffer of `elements` whose gradients become final from
// `ready_offsets[i]` on at ready point i (LanguageModel::gradient_ready_offsets: decreasing, the
// last 0): consecutive groups join a bucket until it holds at least `bucket_elements`. Every group
// must be a multiple of ranks × 8 elements (the layout makes them multiples of ranks × 128), so
// chunks are equal and 16-byte aligned. InvalidArgument otherwise.
BucketPlan plan_buckets(const std::vector<std::size_t>& ready_offsets, std::size_t elements,
                        int ranks, std::size_t bucket_elements);

}  // namespace xfbench::train
