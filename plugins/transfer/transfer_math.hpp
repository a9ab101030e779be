// Host-side arithmetic of the transfer families (Memcpy, P2P, NCCL): sizes, names, byte counts and
// nccl-tests' bus-bandwidth factors. Pure functions, unit-tested without a GPU.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "xfbench/dtype.hpp"

namespace xfbench::transfer {

// "4KiB", "4K", "64MiB", "1G", "8B", "8" -> bytes (binary multiples). `flag` names the option in
// the InvalidArgument thrown for anything else (zero, negative, junk, overflow).
std::size_t parse_size(const std::string& text, const std::string& flag);
std::vector<std::size_t> parse_sizes(const std::vector<std::string>& items,
                                     const std::string& flag);
std::string format_size(std::size_t bytes);  // "8 B", "4 KiB", "1 GiB", "1536 B"

std::vector<std::size_t> default_memcpy_sizes();  // 4 KiB, 16 KiB, ..., 1 GiB
std::vector<std::size_t> default_p2p_sizes();     // 1 MiB, 16 MiB, 256 MiB, 1 GiB
std::vector<std::size_t> default_nccl_sizes();    // 8 B, 1 KiB, 64 KiB, 1 MiB, ..., 4 GiB

// ---- Memcpy ----------------------------------------------------------------------------------
enum class Direction { h2d, d2h, d2d };
enum class HostMemory { pinned, pageable, device };  // `device`: both ends on the GPU (d2d)
enum class Engine { ce, sm };                        // copy engine (cudaMemcpyAsync) or a kernel

const char* to_string(Direction d);
const char* to_string(HostMemory m);
const char* to_string(Engine e);
std::string memcpy_name(Direction d, HostMemory m, Engine e, std::size_t bytes);

// Bytes a copy is credited with: d2d reads and writes device memory (2x, like Vector, so it
// compares with HBM bandwidth); h2d and d2h cross PCIe once (1x, as bandwidthTest quotes them).
double memcpy_bytes_counted(Direction d, std::size_t bytes);

// ---- P2P -------------------------------------------------------------------------------------
enum class P2PMode { uni, bi };
const char* to_string(P2PMode m);
std::string p2p_name(P2PMode m, bool peer, Engine e, int src, int dst, std::size_t bytes);
std::string p2p_latency_name(bool peer, Engine e, int src, int dst);
// Bidirectional runs `bytes` each way at once and is credited with both (2x), as
// p2pBandwidthLatencyTest's bidirectional matrix.
double p2p_bytes_counted(P2PMode m, std::size_t bytes);
// Ordered pairs (src != dst) of `gpus` devices, src-major; (0,1),(1,0) when fewer than two.
std::vector<std::pair<int, int>> gpu_pairs(int gpus);

// ---- NCCL ------------------------------------------------------------------------------------
enum class Collective {
  allreduce,
  allgather,
  reducescatter,
  broadcast,
  reduce,
  alltoall,
  sendrecv
};
const char* to_string(Collective c);
Collective parse_collective(const std::string& name);  // throws InvalidArgument
std::vector<Collective> all_collectives();
std::string nccl_name(Collective c, Dtype t, int gpus, std::size_t bytes);

// busbw = algbw * bus_factor (nccl-tests): allreduce 2(n-1)/n; allgather, reducescatter and
// alltoall (n-1)/n; broadcast, reduce and sendrecv 1.
double bus_factor(Collective c, int nranks);

// Element counts per rank for a case of `bytes` (nccl-tests' "size": the largest buffer of a rank,
// i.e. allgather's receive and reducescatter's and alltoall's send buffer). The element count is
// rounded down to a multiple of the rank count where the op splits it; `bytes` holds what ran.
struct CollectiveShape {
  std::size_t send_count = 0;  // elements in each rank's send buffer
  std::size_t recv_count = 0;  // elements in each rank's receive buffer
  std::size_t chunk = 0;       // the op's `count` argument (per-peer chunk for alltoall)
  std::size_t bytes = 0;       // bytes the algbw is computed from
};
CollectiveShape shape_for(Collective c, std::size_t bytes, std::size_t elem_size, int nranks);

// Most ranks whose summed inputs (1..4 each) stay exactly representable in `t` (fp16 2048, bf16
// 256 consecutive integers): beyond it the check could not be exact.
int max_exact_ranks(Dtype t);

}  // namespace xfbench::transfer
