// The plugin ABI. A plugin exports one entry point, `xfbench_plugin_v1`, returning a descriptor
// whose first three fields never move: the host reads them before anything else and refuses a
// plugin built against another SDK ABI, another Google Benchmark version, or another C++ runtime.
#pragma once

#include <boost/dll/alias.hpp>

#include <cstdint>

namespace xfbench {

// Bump on any change to the SDK's public headers that breaks binary compatibility.
constexpr std::uint32_t kSdkAbiVersion = 1;

#ifndef XFBENCH_BENCHMARK_VERSION
#error "XFBENCH_BENCHMARK_VERSION must be set by the build (link the xfbench::sdk target)"
#endif
// Google Benchmark's version as major*10000 + minor*100 + patch (1.7.1 -> 10701).
constexpr std::uint32_t kBenchmarkVersion = XFBENCH_BENCHMARK_VERSION;

// libstdc++ and libc++ objects cannot cross the boundary; neither can two major ABIs of one.
#if defined(_LIBCPP_VERSION)
constexpr std::uint32_t kCxxRuntime = 2000000 + _LIBCPP_ABI_VERSION;
#elif defined(__GLIBCXX__)
constexpr std::uint32_t kCxxRuntime = 1000000 + _GLIBCXX_USE_CXX11_ABI;
#else
constexpr std::uint32_t kCxxRuntime = 0;
#endif

struct PluginDescriptor {
  std::uint32_t sdk_abi;            // fixed position: read first
  std::uint32_t benchmark_version;  // fixed position
  std::uint32_t cxx_runtime;        // fixed position
  const char* name;
  const char* version;
  const char* description;
  void (*register_cases)();  // adds the plugin's cases; may throw (reported, plugin skipped)
};

}  // namespace xfbench

#define XFBENCH_PLUGIN_ENTRY xfbench_plugin_v1

// In exactly one source file of a plugin:
//   XFBENCH_PLUGIN("matmul", "1.0.0", "cuBLASLt GEMM TFLOPS", register_matmul_cases)
#define XFBENCH_PLUGIN(NAME, VERSION, DESCRIPTION, REGISTER)                                 \
  namespace {                                                                                \
  const ::xfbench::PluginDescriptor xfbench_plugin_descriptor_{::xfbench::kSdkAbiVersion,    \
                                                               ::xfbench::kBenchmarkVersion, \
                                                               ::xfbench::kCxxRuntime,       \
                                                               NAME,                         \
                                                               VERSION,                      \
                                                               DESCRIPTION,                  \
                                                               REGISTER};                    \
  const ::xfbench::PluginDescriptor* xfbench_plugin_entry_() {                               \
    return &xfbench_plugin_descriptor_;                                                      \
  }                                                                                          \
  }                                                                                          \
  BOOST_DLL_ALIAS(xfbench_plugin_entry_, XFBENCH_PLUGIN_ENTRY)
