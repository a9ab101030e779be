#include "plugin_loader.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <filesystem>

#include "elf_check.hpp"
#include "xfbench/detail/host.hpp"
#include "xfbench/error.hpp"
#include "xfbench/plugin.hpp"

namespace fs = std::filesystem;

namespace xfbench::host {
namespace {

#define XF_STR2(x) #x
#define XF_STR(x) XF_STR2(x)
constexpr const char* kEntry = XF_STR(XFBENCH_PLUGIN_ENTRY);

std::string benchmark_version_string(std::uint32_t v) {
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
         std::to_string(v % 100);
}

std::string runtime_string(std::uint32_t v) {
  if (v / 1000000 == 1) return std::string("libstdc++ (") + (v % 2 ? "C++11" : "old") + " ABI)";
  if (v / 1000000 == 2) return "libc++ ABI " + std::to_string(v % 1000000);
  return "unknown C++ runtime";
}

// Why a descriptor cannot be used by this host, or "".
std::string abi_mismatch(const PluginDescriptor& d) {
  if (d.sdk_abi != kSdkAbiVersion) {
    return "built against xfbench SDK ABI " + std::to_string(d.sdk_abi) + ", this host has ABI " +
           std::to_string(kSdkAbiVersion) + " (rebuild the plugin against this SDK)";
  }
  if (d.benchmark_version != kBenchmarkVersion) {
    return "built against Google Benchmark " + benchmark_version_string(d.benchmark_version) +
           ", this host uses " + benchmark_version_string(kBenchmarkVersion);
  }
  if (d.cxx_runtime != kCxxRuntime) {
    return "built with " + runtime_string(d.cxx_runtime) + ", this host uses " +
           runtime_string(kCxxRuntime);
  }
  if (!d.name || !*d.name || !d.register_cases)
    return "descriptor has no name or no registration function";
  return "";
}

}  // namespace

std::vector<std::string> default_plugin_dirs(const std::string& executable_dir) {
  return {(fs::path(executable_dir) / ".." / "lib" / "xfbench" / "plugins")
              .lexically_normal()
              .string()};
}

void PluginLoader::load_directory(const std::string& dir, bool named_by_user) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    if (named_by_user) errors_.push_back({dir, "not a directory"});
    return;
  }
  std::vector<std::string> files;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    // Anything named *.so is a plugin the user meant to load: what is not a regular file is
    // reported.
    if (e.path().extension() == ".so") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  for (const std::string& f : files) load_file(f);
}

void PluginLoader::load_file(const std::string& path) {
  LoadedPlugin p;
  p.path = fs::absolute(path).lexically_normal().string();
  for (const LoadedPlugin& q : plugins_) {
    if (q.path == p.path) return;  // the same file through two search paths
  }
  if (std::string why = elf_problem(p.path); !why.empty()) {
    errors_.push_back({p.path, why});
    return;
  }
  try {
    // rtld_now: an unresolved symbol is reported here, not as a crash in the middle of a run.
    p.library.load(p.path, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  } catch (const std::exception& e) {
    errors_.push_back({p.path, std::string("cannot load: ") + e.what()});
    return;
  }
  // Plugins are never unloaded: Google Benchmark's registry (a static destroyed after main returns)
  // holds their case bodies.
  dlopen(p.path.c_str(), RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
  if (!p.library.has(kEntry)) {
    errors_.push_back({p.path, std::string("no xfbench entry point '") + kEntry +
                                   "' (not a plugin, or built without XFBENCH_PLUGIN)"});
    return;
  }
  const PluginDescriptor* d = nullptr;
  try {
    d = p.library.get_alias<const PluginDescriptor*()>(kEntry)();
  } catch (const std::exception& e) {
    errors_.push_back({p.path, std::string("entry point failed: ") + e.what()});
    return;
  }
  if (!d) {
    errors_.push_back({p.path, "entry point returned no descriptor"});
    return;
  }
  if (std::string why = abi_mismatch(*d); !why.empty()) {
    errors_.push_back({p.path, why});
    return;
  }
  for (const LoadedPlugin& q : plugins_) {
    if (q.name == d->name) {
      errors_.push_back(
          {p.path, std::string("plugin '") + d->name + "' is already loaded from " + q.path});
      return;
    }
  }
  p.name = d->name;
  p.version = d->version ? d->version : "";
  p.description = d->description ? d->description : "";
  detail::set_registering_plugin(p.name);
  struct Restore {  // flags declared after registration belong to the host
    ~Restore() { detail::set_registering_plugin("xfbench"); }
  } restore;
  try {
    d->register_cases();
    p.cases = detail::commit_pending_cases();
  } catch (const InvalidArgument& e) {
    detail::discard_pending_cases();
    argument_errors_.push_back({p.path, e.message()});
    return;
  } catch (const std::exception& e) {
    detail::discard_pending_cases();
    std::string what = e.what();
    if (auto* xe = dynamic_cast<const Error*>(&e)) what = xe->message();
    errors_.push_back({p.path, "registration failed: " + what});
    return;
  } catch (...) {
    detail::discard_pending_cases();
    errors_.push_back({p.path, "registration failed: unknown exception"});
    return;
  }
  plugins_.push_back(std::move(p));
}

}  // namespace xfbench::host
