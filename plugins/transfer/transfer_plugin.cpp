// The transfer plugin: Memcpy (host<->device, device<->device), P2P (GPU pairs) and NCCL
// (collectives), with every copy and collective result checked.
#include <string>
#include <vector>

#include "kernels/comm/nccl_comm.hpp"
#include "transfer_cases.hpp"
#include "xfbench/topology.hpp"
#include "xfbench/xfbench.hpp"

namespace xfbench::transfer {
namespace {

// Sizes from --xfbench_<name>: all of them in the default suite, else `fallback` with `core` of
// them there.
constexpr std::size_t MiB = std::size_t(1) << 20;

Sizes sizes_flag(const std::string& name, const std::string& help,
                 std::vector<std::size_t> fallback, std::vector<std::size_t> core,
                 std::size_t multiple) {
  std::vector<std::size_t> sizes = parse_sizes(flag_list(name, help), name);
  if (sizes.empty()) return {fallback, core};
  for (std::size_t b : sizes) {
    if (b % multiple) {
      XF_THROW(InvalidArgument, "--xfbench_" + name + ": " + std::to_string(b) +
                                    " bytes is not a multiple of " + std::to_string(multiple));
    }
  }
  return {sizes, sizes};
}

void register_cases() {
  kernels::init_at_registration();
  const std::vector<int> gpus = gpus_flag();
  const auto nccl_sizes = sizes_flag(
      "nccl_sizes", "NCCL sizes, e.g. 8B,1MiB,1GiB (default 8B,1KiB,64KiB,1MiB,16MiB,...,4GiB)",
      default_nccl_sizes(), {MiB, 256 * MiB}, 1);
  std::vector<Collective> ops;
  for (const std::string& o : flag_list("nccl_ops",
                                        "NCCL ops (default all: allreduce, "
                                        "allgather, reducescatter, broadcast, reduce, "
                                        "alltoall, sendrecv)")) {
    ops.push_back(parse_collective(o));
  }
  if (ops.empty()) ops = all_collectives();
  std::vector<Dtype> dtypes;
  for (const std::string& d : flag_list("nccl_dtypes", "NCCL dtypes (default fp32,fp16,bf16)")) {
    Dtype t = parse_dtype(d);
    if (t != Dtype::fp32 && t != Dtype::fp16 && t != Dtype::bf16) {
      XF_THROW(InvalidArgument, "--xfbench_nccl_dtypes: " + d + " is not one of fp32, fp16, bf16");
    }
    dtypes.push_back(t);
  }
  if (dtypes.empty()) dtypes = {Dtype::fp32, Dtype::fp16, Dtype::bf16};

  // Under MPI the processes share nodes: only the collectives are meaningful there.
  if (!kernels::mpi_enabled()) {
    register_memcpy_cases(sizes_flag("memcpy_sizes",
                                     "Memcpy sizes, e.g. 4KiB,256MiB (default 4KiB,16KiB,...,1GiB)",
                                     default_memcpy_sizes(), {256 * MiB}, 4));
    P2POptions o;
    const std::string by =
        flag_string("p2p_copy_by", "src", "which GPU issues P2P copies: src (push) or dst (pull)");
    if (by != "src" && by != "dst") {
      XF_THROW(InvalidArgument, "--xfbench_p2p_copy_by: expected src or dst, got '" + by + "'");
    }
    o.pull = by == "dst";
    o.ce_streams = int(flag_int("p2p_ce_streams", 1,
                                "streams (copy engines) a P2P copy-engine copy is split over"));
    o.blocks_per_sm =
        int(flag_int("p2p_blocks_per_sm", 0,
                     "P2P SM copies on a persistent grid of N 512-thread blocks per SM "
                     "(0: one tile per block, the default)"));
    if (o.ce_streams < 1 || o.ce_streams > 16 || o.blocks_per_sm < 0 || o.blocks_per_sm > 4) {
      XF_THROW(InvalidArgument,
               "--xfbench_p2p_ce_streams must be 1..16 and --xfbench_p2p_blocks_per_sm 0..4");
    }
    register_topology_case(gpus);
    register_p2p_cases(gpus,
                       sizes_flag("p2p_sizes", "P2P sizes (default 1MiB,16MiB,256MiB,1GiB)",
                                  default_p2p_sizes(), {256 * MiB}, 4),
                       o);
  }
  register_nccl_cases(gpus, ops, dtypes, nccl_sizes);
  // Topology in the JSON context (peer access, NVLinks, PCIe links), read when a GPU is usable.
  add_context_provider([] {
    int n = 0;
    XF_CUDA_CHECK(cudaGetDeviceCount(&n));
    ContextEntries entries = topology_context(n);
    entries.emplace_back("mpi", kernels::mpi_build_status());
    return entries;
  });
}

}  // namespace
}  // namespace xfbench::transfer

XFBENCH_PLUGIN("transfer", "1.0.0",
               "host/device and GPU-to-GPU copies (Memcpy, P2P) and NCCL collectives, checked",
               xfbench::transfer::register_cases)
