// Built (as it claims) against another Google Benchmark version.
#include <boost/dll/alias.hpp>

#include "xfbench/plugin.hpp"

namespace {
void register_nothing() {}
const xfbench::PluginDescriptor descriptor{xfbench::kSdkAbiVersion, 10800, xfbench::kCxxRuntime,
                                           "bad_benchmark",         "1.0", "other benchmark",
                                           register_nothing};
const xfbench::PluginDescriptor* entry() { return &descriptor; }
}  // namespace
BOOST_DLL_ALIAS(entry, XFBENCH_PLUGIN_ENTRY)
