// How the GPUs are connected (the Transfer plugin, the Burn plugin and the host's
// --xfbench_devices share it): PCIe link to the host (NVML), peer access between GPUs (CUDA) and
// active NVLinks between them (NVML, loaded at run time; without it links read as unknown).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace xfbench {

// PCIe bandwidth per direction in GB/s for a link generation (1..6) and lane count, after line
// encoding (8b/10b up to Gen2, 128b/130b for Gen3..5, 242/256 FLIT for Gen6); 0 when unknown.
double pcie_gbs_per_direction(int generation, int width);

struct PcieLink {
  int max_gen = 0, max_width = 0;  // what the GPU and slot can do together
  int cur_gen = 0, cur_width = 0;  // now (idle GPUs train down: the max is the peak)
  double peak_gbs() const;         // per direction at max_gen x max_width; 0 when unknown
  std::string describe() const;    // "PCIe Gen5 x16 (now Gen5 x16), 63.0 GB/s per direction"
};
PcieLink pcie_link(int cuda_device);  // zeros when NVML cannot tell

// Active NVLinks between two CUDA devices (direct, or through NVSwitch: the fewer of the two
// GPUs' switch links); -1 when NVML cannot tell.
int nvlink_count(int a, int b);
bool can_access_peer(int a, int b);  // cudaDeviceCanAccessPeer
std::string nvml_topology_status();  // "ok" or why NVLink/PCIe queries are unavailable

// The topology as context keys (for the SDK's JSON context): gpu_count, gpu<i>_pcie,
// p2p_access ("0>1:yes,1>0:yes"), nvlinks ("0-1:18"). Touches the GPU: call after registration.
std::vector<std::pair<std::string, std::string>> topology_context(int gpus);

}  // namespace xfbench
