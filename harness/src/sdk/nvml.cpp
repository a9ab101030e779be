#include "xfbench/nvml.hpp"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nvml.h>

namespace xfbench {
namespace {

struct Library {
  void* handle = nullptr;
  std::string status = "ok";
};

const Library& library() {
  static const Library lib = [] {
    Library l;
    l.handle = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!l.handle) {
      l.status = std::string("libnvidia-ml.so.1 not loadable: ") + dlerror();
      return l;
    }
    auto init = reinterpret_cast<nvmlReturn_t (*)()>(dlsym(l.handle, "nvmlInit_v2"));
    if (!init) {
      l.status = "libnvidia-ml.so.1 has no nvmlInit_v2";
    } else if (nvmlReturn_t r = init(); r != NVML_SUCCESS) {
      l.status = "nvmlInit failed with code " + std::to_string(int(r));
    }
    return l;
  }();
  return lib;
}

}  // namespace

const std::string& nvml_status() { return library().status; }

void* nvml_symbol(const char* name) {
  const Library& l = library();
  return l.status == "ok" ? dlsym(l.handle, name) : nullptr;
}

void* nvml_device(int cuda_device) {
  auto by_pci = nvml_function<nvmlReturn_t (*)(const char*, nvmlDevice_t*)>(
      "nvmlDeviceGetHandleByPciBusId_v2");
  char bus[32] = {};
  if (!by_pci) return nullptr;
  if (cudaDeviceGetPCIBusId(bus, sizeof bus, cuda_device) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  nvmlDevice_t dev{};
  return by_pci(bus, &dev) == NVML_SUCCESS ? static_cast<void*>(dev) : nullptr;
}

}  // namespace xfbench
