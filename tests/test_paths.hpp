// Paths of build outputs the tests run, resolved relative to the test binary so a build folder
// still works when copied elsewhere (as the GPU runs do).
#pragma once

#include <filesystem>
#include <string>

namespace xftest {

inline std::string from_test_dir(const char* relative) {
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe");
  return (self.parent_path() / relative).lexically_normal().string();
}

inline std::string host_bin() { return from_test_dir(XF_HOST_BIN_REL); }
inline std::string test_plugin_dir() { return from_test_dir(XF_TEST_PLUGIN_DIR_REL); }

}  // namespace xftest
