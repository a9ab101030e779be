#include "xfbench/topology.hpp"

#include <cuda_runtime_api.h>
#include <nvml.h>

#include <algorithm>
#include <cstdio>
#include <mutex>

#include "xfbench/nvml.hpp"

namespace xfbench {
namespace {

// The NVML functions the topology needs, bound once through the SDK (never linked).
struct Nvml {
  std::string status = "ok";
  nvmlReturn_t (*max_gen)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*max_width)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*cur_gen)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*cur_width)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*link_state)(nvmlDevice_t, unsigned, nvmlEnableState_t*) = nullptr;
  nvmlReturn_t (*remote_pci)(nvmlDevice_t, unsigned, nvmlPciInfo_t*) = nullptr;
  nvmlReturn_t (*remote_type)(nvmlDevice_t, unsigned, nvmlIntNvLinkDeviceType_t*) = nullptr;
  bool ok() const { return status == "ok"; }
};

template <class F>
bool bind(F& fn, const char* name) {
  fn = nvml_function<F>(name);
  return fn != nullptr;
}

Nvml load() {
  Nvml n;
  if (nvml_status() != "ok") {
    n.status = nvml_status();
    return n;
  }
  if (!bind(n.max_gen, "nvmlDeviceGetMaxPcieLinkGeneration") ||
      !bind(n.max_width, "nvmlDeviceGetMaxPcieLinkWidth") ||
      !bind(n.cur_gen, "nvmlDeviceGetCurrPcieLinkGeneration") ||
      !bind(n.cur_width, "nvmlDeviceGetCurrPcieLinkWidth") ||
      !bind(n.link_state, "nvmlDeviceGetNvLinkState") ||
      !bind(n.remote_pci, "nvmlDeviceGetNvLinkRemotePciInfo_v2")) {
    n.status = "libnvidia-ml.so.1 lacks a needed function";
    return n;
  }
  bind(n.remote_type, "nvmlDeviceGetNvLinkRemoteDeviceType");  // optional (newer drivers)
  return n;
}

Nvml& nvml() {
  static Nvml n = load();
  return n;
}

bool handle_of(int cuda_device, nvmlDevice_t* dev) {
  if (!nvml().ok()) return false;
  *dev = static_cast<nvmlDevice_t>(nvml_device(cuda_device));
  return *dev != nullptr;
}

// PCI location of a CUDA device as (domain, bus, device).
struct PciLoc {
  unsigned domain = 0, bus = 0, device = 0;
  bool operator==(const PciLoc& o) const {
    return domain == o.domain && bus == o.bus && device == o.device;
  }
};

PciLoc pci_of(int cuda_device) {
  PciLoc p;
  int v = 0;
  if (cudaDeviceGetAttribute(&v, cudaDevAttrPciDomainId, cuda_device) == cudaSuccess) p.domain = v;
  if (cudaDeviceGetAttribute(&v, cudaDevAttrPciBusId, cuda_device) == cudaSuccess) p.bus = v;
  if (cudaDeviceGetAttribute(&v, cudaDevAttrPciDeviceId, cuda_device) == cudaSuccess) p.device = v;
  cudaGetLastError();
  return p;
}

// Active links of one GPU: to which PCI endpoints, and how many to NVSwitches.
struct Links {
  bool known = false;
  std::vector<PciLoc> to_gpu;
  int to_switch = 0;
};

Links links_of(int cuda_device) {
  Links l;
  nvmlDevice_t dev{};
  if (!handle_of(cuda_device, &dev)) return l;
  Nvml& n = nvml();
  l.known = true;
  for (unsigned link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
    nvmlEnableState_t active = NVML_FEATURE_DISABLED;
    if (n.link_state(dev, link, &active) != NVML_SUCCESS || active != NVML_FEATURE_ENABLED)
      continue;
    nvmlIntNvLinkDeviceType_t type = NVML_NVLINK_DEVICE_TYPE_GPU;
    if (n.remote_type && n.remote_type(dev, link, &type) == NVML_SUCCESS &&
        type == NVML_NVLINK_DEVICE_TYPE_SWITCH) {
      ++l.to_switch;
      continue;
    }
    nvmlPciInfo_t pci{};
    if (n.remote_pci(dev, link, &pci) != NVML_SUCCESS) continue;
    l.to_gpu.push_back(PciLoc{pci.domain, pci.bus, pci.device});
  }
  return l;
}

std::string fixed1(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

}  // namespace

double pcie_gbs_per_direction(int generation, int width) {
  if (width <= 0) return 0;
  double gts = 0, efficiency = 128.0 / 130.0;
  switch (generation) {
    case 1:
      gts = 2.5, efficiency = 0.8;
      break;
    case 2:
      gts = 5, efficiency = 0.8;
      break;
    case 3:
      gts = 8;
      break;
    case 4:
      gts = 16;
      break;
    case 5:
      gts = 32;
      break;
    case 6:
      gts = 64, efficiency = 242.0 / 256.0;
      break;
    default:
      return 0;
  }
  return gts * efficiency * width / 8.0;  // GT/s per lane = Gbit/s per lane
}

double PcieLink::peak_gbs() const { return pcie_gbs_per_direction(max_gen, max_width); }

std::string PcieLink::describe() const {
  if (max_gen == 0) return "PCIe link unknown (" + nvml_topology_status() + ")";
  return "PCIe Gen" + std::to_string(max_gen) + " x" + std::to_string(max_width) + " (now Gen" +
         std::to_string(cur_gen) + " x" + std::to_string(cur_width) + "), " + fixed1(peak_gbs()) +
         " GB/s per direction";
}

PcieLink pcie_link(int cuda_device) {
  PcieLink p;
  nvmlDevice_t dev{};
  if (!handle_of(cuda_device, &dev)) return p;
  Nvml& n = nvml();
  unsigned g = 0, w = 0, cg = 0, cw = 0;
  if (n.max_gen(dev, &g) != NVML_SUCCESS || n.max_width(dev, &w) != NVML_SUCCESS) return p;
  n.cur_gen(dev, &cg);
  n.cur_width(dev, &cw);
  p.max_gen = int(g), p.max_width = int(w), p.cur_gen = int(cg), p.cur_width = int(cw);
  return p;
}

int nvlink_count(int a, int b) {
  Links la = links_of(a), lb = links_of(b);
  if (!la.known || !lb.known) return -1;
  PciLoc pb = pci_of(b);
  int direct = int(std::count(la.to_gpu.begin(), la.to_gpu.end(), pb));
  return direct + std::min(la.to_switch, lb.to_switch);
}

bool can_access_peer(int a, int b) {
  int ok = 0;
  if (cudaDeviceCanAccessPeer(&ok, a, b) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return ok != 0;
}

std::string nvml_topology_status() { return nvml().status; }

std::vector<std::pair<std::string, std::string>> topology_context(int gpus) {
  std::vector<std::pair<std::string, std::string>> out;
  out.emplace_back("gpu_count", std::to_string(gpus));
  std::string access, links;
  for (int i = 0; i < gpus; ++i) {
    out.emplace_back("gpu" + std::to_string(i) + "_pcie", pcie_link(i).describe());
    for (int j = 0; j < gpus; ++j) {
      if (i == j) continue;
      access += (access.empty() ? "" : ",") + std::to_string(i) + ">" + std::to_string(j) + ":" +
                (can_access_peer(i, j) ? "yes" : "no");
      if (j > i) {
        int n = nvlink_count(i, j);
        links += (links.empty() ? "" : ",") + std::to_string(i) + "-" + std::to_string(j) + ":" +
                 (n < 0 ? std::string("unknown") : std::to_string(n));
      }
    }
  }
  out.emplace_back("p2p_access", access.empty() ? "n/a (one GPU)" : access);
  out.emplace_back("nvlinks", links.empty() ? "n/a (one GPU)" : links);
  return out;
}

}  // namespace xfbench
