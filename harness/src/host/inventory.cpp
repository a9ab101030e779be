#include "inventory.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "xfbench/device.hpp"
#include "xfbench/gpu_health.hpp"
#include "xfbench/telemetry.hpp"  // the SDK's NVML driver version
#include "xfbench/topology.hpp"

namespace xfbench::host {
namespace {

std::string cuda_version(int v) {
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

// A square table of GPUs: a header row of names, then one row per GPU, "X" on the diagonal.
std::string gpu_matrix(const std::vector<std::vector<std::string>>& cells) {
  const std::size_t n = cells.size();
  std::size_t width = 6;  // "GPU10 "
  for (const auto& row : cells)
    for (const std::string& c : row) width = std::max(width, c.size() + 1);
  auto cell = [&](const std::string& text) { return text + std::string(width - text.size(), ' '); };
  auto end_line = [](std::string& s) {
    while (!s.empty() && s.back() == ' ') s.pop_back();
    s += "\n";
  };
  std::string out = cell("");
  for (std::size_t j = 0; j < n; ++j) out += cell("GPU" + std::to_string(j));
  end_line(out);
  for (std::size_t i = 0; i < n; ++i) {
    out += cell("GPU" + std::to_string(i));
    for (std::size_t j = 0; j < n; ++j) out += cell(i == j ? " X" : cells[i][j]);
    end_line(out);
  }
  return out;
}

std::string fixed(double v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

}  // namespace

std::string link_cell(int nvlinks, const std::string& pcie_path) {
  return nvlinks > 0 ? "NV" + std::to_string(nvlinks) : pcie_path;
}

Inventory collect_inventory() {
  Inventory inv;
  inv.driver = nvml_driver_version();
  int v = 0;
  if (cudaDriverGetVersion(&v) == cudaSuccess) inv.cuda_driver = cuda_version(v);
  if (cudaRuntimeGetVersion(&v) == cudaSuccess) inv.cuda_runtime = cuda_version(v);
  if (inv.driver.empty()) inv.driver = "unknown (" + telemetry_status() + ")";
  const int n = device_count();
  for (int i = 0; i < n; ++i) {
    const DeviceInfo info = read_device_info(i);
    GpuEntry g;
    g.index = i;
    g.name = info.name;
    g.uuid = gpu_uuid(i);
    g.pci_bus = pci_bus_id(i);
    g.cc_major = info.cc_major;
    g.cc_minor = info.cc_minor;
    g.sm_count = info.sm_count;
    g.max_sm_mhz = info.max_sm_clock_mhz;
    g.max_mem_mhz = info.max_mem_clock_mhz;
    g.bus_width_bits = info.bus_width_bits;
    g.mem_gb = info.total_mem / 1e9;
    g.pcie = pcie_link(i).describe();
    g.power_limit_w = power_limit_watts(i);
    g.ecc = ecc_mode(i);
    inv.gpus.push_back(g);
  }
  inv.links.assign(std::size_t(n), std::vector<std::string>(std::size_t(n), "X"));
  inv.p2p.assign(std::size_t(n), std::vector<bool>(std::size_t(n), false));
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      if (i == j) continue;
      inv.links[i][j] = link_cell(nvlink_count(i, j), pcie_path(i, j));
      inv.p2p[i][j] = can_access_peer(i, j);
    }
  }
  return inv;
}

std::string format_inventory(const Inventory& inv) {
  const std::size_t n = inv.gpus.size();
  std::string out = "xfbench device inventory: " + std::to_string(n) + " GPU" +
                    (n == 1 ? "" : "s") + "; driver " + inv.driver + ", CUDA " + inv.cuda_driver +
                    " (driver), " + inv.cuda_runtime + " (runtime)\n";
  for (const GpuEntry& g : inv.gpus) {
    auto line = [&](const char* key, const std::string& value) {
      out += std::string("      ") + key + std::string(13 - std::string(key).size(), ' ') + value +
             "\n";
    };
    out += "\nGPU" + std::to_string(g.index) + "  " + g.name + "\n";
    line("UUID", g.uuid);
    line("PCI bus", g.pci_bus + ", " + g.pcie);
    line("compute", std::to_string(g.cc_major) + "." + std::to_string(g.cc_minor) + ", " +
                        std::to_string(g.sm_count) + " SMs, SM clock up to " +
                        std::to_string(g.max_sm_mhz) + " MHz");
    line("memory", fixed(g.mem_gb, 1) + " GB, " + std::to_string(g.bus_width_bits) +
                       "-bit bus, clock up to " + std::to_string(g.max_mem_mhz) + " MHz");
    line("power limit", g.power_limit_w > 0 ? fixed(g.power_limit_w, 0) + " W" : "unknown");
    line("ECC", g.ecc);
  }
  std::vector<std::vector<std::string>> p2p(n, std::vector<std::string>(n));
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) p2p[i][j] = inv.p2p[i][j] ? "OK" : "no";
  out += "\nLinks (as nvidia-smi topo -m)\n" + gpu_matrix(inv.links);
  out += "\nP2P access (cudaDeviceCanAccessPeer, row to column)\n" + gpu_matrix(p2p);
  out +=
      "\nLegend: X = self, NV# = # NVLinks (direct or through NVSwitches), PIX = at most one PCIe "
      "bridge,\nPXB = several PCIe bridges, PHB = a PCIe host bridge, NODE = host bridges of one "
      "NUMA node,\nSYS = across NUMA nodes, ? = unknown (no NVML); OK = peer access, no = none\n";
  return out;
}

}  // namespace xfbench::host
