// NVML, loaded at run time: libnvidia-ml comes with the driver and is never linked, so xfbench
// starts on machines without one. Include <nvml.h> for the types of the functions you look up.
#pragma once

#include <string>

namespace xfbench {

// "ok", or why NVML is unavailable (no library, a missing function, nvmlInit failed).
const std::string& nvml_status();

// A function of libnvidia-ml (NVML initialised), or nullptr when NVML or the function is missing.
void* nvml_symbol(const char* name);
template <class F>
F nvml_function(const char* name) {
  return reinterpret_cast<F>(nvml_symbol(name));
}

// The nvmlDevice_t of a CUDA device (matched by PCI bus id), or nullptr.
void* nvml_device(int cuda_device);

}  // namespace xfbench
