// Stamped with an SDK ABI this host does not have.
#include <boost/dll/alias.hpp>

#include "xfbench/plugin.hpp"

namespace {
void register_nothing() {}
const xfbench::PluginDescriptor descriptor{999,
                                           xfbench::kBenchmarkVersion,
                                           xfbench::kCxxRuntime,
                                           "bad_abi",
                                           "1.0",
                                           "wrong ABI",
                                           register_nothing};
const xfbench::PluginDescriptor* entry() { return &descriptor; }
}  // namespace
BOOST_DLL_ALIAS(entry, XFBENCH_PLUGIN_ENTRY)
