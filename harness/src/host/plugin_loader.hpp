// Finds and loads plugins with Boost.DLL, checks their ABI stamp, and runs their registration.
// A bad plugin becomes one PluginError (file + reason); the others still load.
#pragma once

#include <boost/dll/shared_library.hpp>

#include <string>
#include <vector>

namespace xfbench::host {

struct LoadedPlugin {
  std::string name, version, description, path;
  std::size_t cases = 0;
  boost::dll::shared_library library;  // kept loaded until the process ends
};

struct PluginError {
  std::string path, reason;
};

class PluginLoader {
 public:
  // Every regular file named *.so in `dir`, in name order. A missing directory is an error only
  // when the user named it.
  void load_directory(const std::string& dir, bool named_by_user);
  void load_file(const std::string& path);

  const std::vector<LoadedPlugin>& plugins() const { return plugins_; }
  const std::vector<PluginError>& errors() const { return errors_; }
  // Flag errors thrown while registering (bad --xfbench_<plugin>_* values): invalid arguments.
  const std::vector<PluginError>& argument_errors() const { return argument_errors_; }

 private:
  std::vector<LoadedPlugin> plugins_;
  std::vector<PluginError> errors_;
  std::vector<PluginError> argument_errors_;
};

// Where plugins are looked for: next to the executable (../lib/xfbench/plugins), then each
// --xfbench_plugin_dir, then each entry of XFBENCH_PLUGIN_PATH.
std::vector<std::string> default_plugin_dirs(const std::string& executable_dir);

}  // namespace xfbench::host
