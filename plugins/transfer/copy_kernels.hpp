// Kernels of the transfer families: the SM copy (device, peer and mapped host pointers alike),
// pattern fill and check for copies, input fill and result check for collectives. Launchers run on
// the current device and take the stream last; counting functions synchronise their stream.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "pattern.hpp"
#include "xfbench/dtype.hpp"

namespace xfbench::transfer {

// Copies `bytes` from src to dst with a kernel of the current device. Default: one 16-byte access
// per thread, one tile per block. `blocks_per_sm` > 0: a persistent grid of that many 512-thread
// blocks per SM, four accesses in flight per thread (a tuning knob for NVLink copies).
void sm_copy(void* dst, const void* src, std::size_t bytes, cudaStream_t stream,
             int blocks_per_sm = 0);

// pattern_word(i, seed) into `words` 32-bit words of memory the current device can write.
void fill_pattern(void* dst, std::size_t words, std::uint32_t seed, cudaStream_t stream);
// Words of `p` (memory the current device can read) that differ from the pattern.
std::size_t count_pattern_mismatches(const void* p, std::size_t words, std::uint32_t seed,
                                     cudaStream_t stream);
// The same on the CPU, for pageable host memory (several threads for large buffers).
void fill_pattern_host(void* dst, std::size_t words, std::uint32_t seed);
std::size_t count_pattern_mismatches_host(const void* p, std::size_t words, std::uint32_t seed);

// input_value(rank, j) as `t` (fp32, fp16, bf16) into `count` elements.
void fill_inputs(void* buf, std::size_t count, Dtype t, int rank, cudaStream_t stream);
// Elements of rank r's receive buffer that differ from expected_value() (NaN counts as wrong).
std::size_t count_wrong(CheckOp op, Dtype t, const void* recv, std::size_t recv_count, int rank,
                        int nranks, std::size_t chunk, cudaStream_t stream);

}  // namespace xfbench::transfer
