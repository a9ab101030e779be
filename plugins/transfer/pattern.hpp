// Data the transfer cases move, as functions of the position (usable on host and device), so a
// result is checked without keeping a second copy: copies move pattern_word(i, seed); collectives
// reduce small integers (1..4 per rank) whose sums stay exact in fp32, fp16 and bf16.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
#define XF_TRANSFER_HD __host__ __device__ __forceinline__
#else
#define XF_TRANSFER_HD inline
#endif

namespace xfbench::transfer {

// A well-mixed 32-bit word for index i (a shifted or misplaced block is caught, as is a zero).
XF_TRANSFER_HD std::uint32_t pattern_word(std::uint64_t i, std::uint32_t seed) {
  std::uint64_t z = i + 0x9E3779B97F4A7C15ull * (std::uint64_t(seed) + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return std::uint32_t(z ^ (z >> 31));
}

// Rank r's input at element j of its send buffer: 1..4, depending on both (a block that lands at
// another rank's place or offset is caught).
XF_TRANSFER_HD int input_value(int rank, std::size_t j) {
  std::uint32_t h = std::uint32_t(j) * 0x9E3779B1u ^ std::uint32_t(j >> 32);
  return 1 + int(((h >> 28) + std::uint32_t(rank)) & 3u);
}

// Op codes shared by the host (Collective) and the check kernel.
enum class CheckOp : int {
  allreduce,
  allgather,
  reducescatter,
  broadcast,
  reduce,
  alltoall,
  sendrecv
};

// What element k of rank r's receive buffer must hold after the op, for n ranks and the op's count
// `chunk` (root 0 for broadcast and reduce). -1 where the op leaves the element undefined.
XF_TRANSFER_HD double expected_value(CheckOp op, int r, int n, std::size_t chunk, std::size_t k) {
  switch (op) {
    case CheckOp::allreduce: {
      double s = 0;
      for (int q = 0; q < n; ++q) s += input_value(q, k);
      return s;
    }
    case CheckOp::allgather:
      return input_value(int(k / chunk), k % chunk);
    case CheckOp::reducescatter: {
      double s = 0;
      for (int q = 0; q < n; ++q) s += input_value(q, std::size_t(r) * chunk + k);
      return s;
    }
    case CheckOp::broadcast:
      return input_value(0, k);
    case CheckOp::reduce: {
      if (r != 0) return -1;
      double s = 0;
      for (int q = 0; q < n; ++q) s += input_value(q, k);
      return s;
    }
    case CheckOp::alltoall:
      return input_value(int(k / chunk), std::size_t(r) * chunk + k % chunk);
    case CheckOp::sendrecv:
      return input_value((r + n - 1) % n, k);
  }
  return -1;
}

}  // namespace xfbench::transfer
