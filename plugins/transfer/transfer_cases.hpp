// The transfer plugin's case families; each registers its cases from the plugin's flags.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <vector>

#include "kernels/comm/rank_threads.hpp"
#include "transfer_math.hpp"
#include "xfbench/case.hpp"

namespace xfbench::transfer {

struct P2POptions {
  bool pull = false;      // --xfbench_p2p_copy_by=dst: the destination GPU issues the copy
  int ce_streams = 1;     // --xfbench_p2p_ce_streams: a copy-engine copy split over N streams
  int blocks_per_sm = 0;  // --xfbench_p2p_blocks_per_sm: SM copy grid (0: kernel default)
};

// The sizes of a family's cases and those of them in the default suite (every size given by flag;
// of the default sizes, the ones the README's default run shows).
struct Sizes {
  std::vector<std::size_t> all, core;
  Suite suite(std::size_t bytes) const {
    return std::find(core.begin(), core.end(), bytes) != core.end() ? Suite::core : Suite::extended;
  }
};

void register_memcpy_cases(const Sizes& sizes);
void register_p2p_cases(const std::vector<int>& gpus, const Sizes& sizes,
                        const P2POptions& options);
void register_topology_case(const std::vector<int>& gpus);
// The default suite holds the first dtype's cases (with two ranks or more).
void register_nccl_cases(const std::vector<int>& gpus, const std::vector<Collective>& ops,
                         const std::vector<Dtype>& dtypes, const Sizes& sizes);

// Multi-GPU cases switch devices; OnDevice restores the current one.
using kernels::OnDevice;

// Throws Unsupported unless `bytes` more fit in 90% of the current device's free memory.
void require_free_memory(std::size_t bytes);

}  // namespace xfbench::transfer
