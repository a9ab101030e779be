// The device inventory of `xfbench --xfbench_devices`: what deviceQuery and `nvidia-smi topo -m`
// tell a lab accepting a machine, in one listing. Collecting touches every visible GPU (no
// kernel runs); formatting is pure, so it is tested on the CPU.
#pragma once

#include <string>
#include <vector>

namespace xfbench::host {

struct GpuEntry {
  int index = 0;
  std::string name, uuid, pci_bus;
  int cc_major = 0, cc_minor = 0, sm_count = 0;
  int max_sm_mhz = 0, max_mem_mhz = 0, bus_width_bits = 0;
  double mem_gb = 0;         // total, 1e9 bytes
  std::string pcie;          // "PCIe Gen5 x16 (now Gen5 x16), 63.0 GB/s per direction"
  double power_limit_w = 0;  // 0: unknown
  std::string ecc;           // "on", "off", ...
};

struct Inventory {
  std::string driver, cuda_driver, cuda_runtime;  // "580.159.04", "13.0", "13.0"
  std::vector<GpuEntry> gpus;
  // [i][j] for i != j: "NV18" (NVLinks), else the PCIe path (PIX, PXB, PHB, NODE, SYS, "?").
  std::vector<std::vector<std::string>> links;
  std::vector<std::vector<bool>> p2p;  // [i][j]: cudaDeviceCanAccessPeer(i, j)
};

// Reads every visible GPU (a usable CUDA device is required).
Inventory collect_inventory();

// The listing: one block per GPU, then the link and P2P matrices with their legend.
std::string format_inventory(const Inventory& inv);

// A matrix cell: "NV<n>" when the GPUs share n > 0 NVLinks, else the PCIe path.
std::string link_cell(int nvlinks, const std::string& pcie_path);

}  // namespace xfbench::host
