#include "xfbench/gpu_health.hpp"

#include <cuda_runtime_api.h>
#include <nvml.h>

#include <cstdio>
#include <type_traits>

#include "xfbench/nvml.hpp"

namespace xfbench {
namespace {

// The NVML functions used here, bound once through the SDK (never linked).
struct Nvml {
  nvmlReturn_t (*uuid)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*power_limit)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*ecc_mode)(nvmlDevice_t, nvmlEnableState_t*, nvmlEnableState_t*) = nullptr;
  nvmlReturn_t (*ecc_total)(nvmlDevice_t, nvmlMemoryErrorType_t, nvmlEccCounterType_t,
                            unsigned long long*) = nullptr;
  nvmlReturn_t (*ancestor)(nvmlDevice_t, nvmlDevice_t, nvmlGpuTopologyLevel_t*) = nullptr;
  nvmlReturn_t (*set_create)(nvmlEventSet_t*) = nullptr;
  nvmlReturn_t (*register_events)(nvmlDevice_t, unsigned long long, nvmlEventSet_t) = nullptr;
  nvmlReturn_t (*set_wait)(nvmlEventSet_t, nvmlEventData_t*, unsigned) = nullptr;
  nvmlReturn_t (*set_free)(nvmlEventSet_t) = nullptr;
};

const Nvml& nvml() {
  static const Nvml n = [] {
    Nvml f;
    auto bind = [](auto& fn, const char* name) {
      fn = nvml_function<std::remove_reference_t<decltype(fn)>>(name);
    };
    bind(f.uuid, "nvmlDeviceGetUUID");
    bind(f.power_limit, "nvmlDeviceGetEnforcedPowerLimit");
    bind(f.ecc_mode, "nvmlDeviceGetEccMode");
    bind(f.ecc_total, "nvmlDeviceGetTotalEccErrors");
    bind(f.ancestor, "nvmlDeviceGetTopologyCommonAncestor");
    bind(f.set_create, "nvmlEventSetCreate");
    bind(f.register_events, "nvmlDeviceRegisterEvents");
    bind(f.set_wait, "nvmlEventSetWait_v2");
    bind(f.set_free, "nvmlEventSetFree");
    return f;
  }();
  return n;
}

nvmlDevice_t handle(int cuda_device) { return static_cast<nvmlDevice_t>(nvml_device(cuda_device)); }

std::string uuid_from_cuda(int cuda_device) {
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, cuda_device) != cudaSuccess) {
    cudaGetLastError();
    return "unknown";
  }
  const auto* b = reinterpret_cast<const unsigned char*>(p.uuid.bytes);
  char text[48];
  std::snprintf(text, sizeof text,
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                b[14], b[15]);
  return text;
}

}  // namespace

std::string gpu_uuid(int cuda_device) {
  char text[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
  nvmlDevice_t dev = handle(cuda_device);
  if (dev && nvml().uuid && nvml().uuid(dev, text, sizeof text) == NVML_SUCCESS) return text;
  return uuid_from_cuda(cuda_device);
}

std::string pci_bus_id(int cuda_device) {
  char bus[32] = {};
  if (cudaDeviceGetPCIBusId(bus, sizeof bus, cuda_device) != cudaSuccess) {
    cudaGetLastError();
    return "unknown";
  }
  return bus;
}

double power_limit_watts(int cuda_device) {
  unsigned mw = 0;
  nvmlDevice_t dev = handle(cuda_device);
  if (!dev || !nvml().power_limit || nvml().power_limit(dev, &mw) != NVML_SUCCESS) return 0;
  return mw / 1000.0;
}

std::string ecc_mode(int cuda_device) {
  nvmlEnableState_t now{}, pending{};
  nvmlDevice_t dev = handle(cuda_device);
  if (dev && nvml().ecc_mode && nvml().ecc_mode(dev, &now, &pending) == NVML_SUCCESS) {
    std::string mode = now == NVML_FEATURE_ENABLED ? "on" : "off";
    if (pending != now)
      mode += pending == NVML_FEATURE_ENABLED ? " (on after reset)" : " (off after reset)";
    return mode;
  }
  int enabled = 0;
  if (cudaDeviceGetAttribute(&enabled, cudaDevAttrEccEnabled, cuda_device) == cudaSuccess) {
    return enabled ? "on" : "off";
  }
  cudaGetLastError();
  return "unknown";
}

EccCounts ecc_counts(int cuda_device) {
  EccCounts c;
  nvmlDevice_t dev = handle(cuda_device);
  if (!dev || !nvml().ecc_total) return c;
  unsigned long long corrected = 0, uncorrected = 0;
  c.known = nvml().ecc_total(dev, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC,
                             &corrected) == NVML_SUCCESS &&
            nvml().ecc_total(dev, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC,
                             &uncorrected) == NVML_SUCCESS;
  c.corrected = corrected;
  c.uncorrected = uncorrected;
  return c;
}

std::string pcie_path_name(int level) {
  switch (level) {
    case NVML_TOPOLOGY_INTERNAL:
    case NVML_TOPOLOGY_SINGLE:
      return "PIX";
    case NVML_TOPOLOGY_MULTIPLE:
      return "PXB";
    case NVML_TOPOLOGY_HOSTBRIDGE:
      return "PHB";
    case NVML_TOPOLOGY_NODE:
      return "NODE";
    case NVML_TOPOLOGY_SYSTEM:
      return "SYS";
  }
  return "?";
}

std::string pcie_path(int a, int b) {
  nvmlDevice_t da = handle(a), db = handle(b);
  nvmlGpuTopologyLevel_t level{};
  if (!da || !db || !nvml().ancestor || nvml().ancestor(da, db, &level) != NVML_SUCCESS) return "?";
  return pcie_path_name(int(level));
}

XidWatcher::XidWatcher(int cuda_device) {
  const Nvml& n = nvml();
  nvmlDevice_t dev = handle(cuda_device);
  if (!dev || !n.set_create || !n.register_events || !n.set_wait || !n.set_free) {
    status_ = "NVML events unavailable";
    return;
  }
  nvmlEventSet_t set{};
  if (n.set_create(&set) != NVML_SUCCESS) {
    status_ = "NVML event set not created";
    return;
  }
  if (nvmlReturn_t r = n.register_events(dev, nvmlEventTypeXidCriticalError, set);
      r != NVML_SUCCESS) {
    n.set_free(set);
    status_ = r == NVML_ERROR_NOT_SUPPORTED
                  ? "Xid events not supported on this GPU"
                  : "Xid events not registered (NVML code " + std::to_string(int(r)) + ")";
    return;
  }
  set_ = set;
}

XidWatcher::~XidWatcher() {
  if (set_) nvml().set_free(static_cast<nvmlEventSet_t>(set_));
}

void XidWatcher::poll() {
  if (!set_) return;
  nvmlEventData_t data{};
  while (nvml().set_wait(static_cast<nvmlEventSet_t>(set_), &data, 0) == NVML_SUCCESS) {
    if (data.eventType & nvmlEventTypeXidCriticalError) xids_.push_back(data.eventData);
  }
}

}  // namespace xfbench
