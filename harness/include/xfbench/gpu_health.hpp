// What NVML says about a GPU's identity and health beyond the SDK's telemetry: UUID, enforced
// power limit, ECC mode and error counts, the PCIe path between two GPUs, and Xid faults. NVML is
// loaded at run time through the SDK; every query answers "unknown" when NVML or the function is
// missing (a VM, an old driver), never throws.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace xfbench {

std::string gpu_uuid(int cuda_device);      // "GPU-8b2c..."; from CUDA when NVML cannot tell
std::string pci_bus_id(int cuda_device);    // "00000000:18:00.0"
double power_limit_watts(int cuda_device);  // enforced limit; 0 when unknown
std::string ecc_mode(int cuda_device);      // "on", "off", "on (off after reset)", "unknown"

// Volatile ECC error counts (since the driver loaded); known = false without ECC or NVML.
struct EccCounts {
  bool known = false;
  std::uint64_t corrected = 0, uncorrected = 0;
};
EccCounts ecc_counts(int cuda_device);

// The PCIe path between two GPUs as `nvidia-smi topo -m` names it: PIX (at most one PCIe
// bridge), PXB (several bridges), PHB (a host bridge), NODE (host bridges of one NUMA node), SYS
// (across NUMA nodes); "?" when NVML cannot tell.
std::string pcie_path(int a, int b);
std::string pcie_path_name(int nvml_topology_level);  // pure: the name of an NVML level

// Critical Xid errors the driver reports for one GPU while a burn runs (NVML events; unsupported
// in many VMs, which `status` then says).
class XidWatcher {
 public:
  explicit XidWatcher(int cuda_device);
  ~XidWatcher();
  XidWatcher(const XidWatcher&) = delete;
  XidWatcher& operator=(const XidWatcher&) = delete;
  void poll();  // collects the events that arrived, without waiting
  const std::vector<std::uint64_t>& xids() const { return xids_; }
  const std::string& status() const { return status_; }  // "ok" or why Xids are not watched

 private:
  void* set_ = nullptr;  // nvmlEventSet_t
  std::vector<std::uint64_t> xids_;
  std::string status_ = "ok";
};

}  // namespace xfbench
