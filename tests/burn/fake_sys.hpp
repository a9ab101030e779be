// A fake /sys (and /proc) tree in a temporary folder, for SysFs(root) in the CPU burn's tests.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace xftest {

class FakeSys {
 public:
  FakeSys() {
    static int n = 0;
    root_ = std::filesystem::temp_directory_path() /
            ("xftest_sys_" + std::to_string(::getpid()) + "_" + std::to_string(n++));
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_);
  }
  ~FakeSys() {
    std::error_code ignored;
    std::filesystem::remove_all(root_, ignored);
  }
  FakeSys(const FakeSys&) = delete;
  FakeSys& operator=(const FakeSys&) = delete;

  // `path` as on the host ("/sys/class/hwmon/hwmon0/name").
  void write(const std::string& path, const std::string& text) {
    const std::filesystem::path p = root_.string() + path;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  // A file no one can read, even root: a folder where the file should be (read fails, EISDIR).
  void unreadable(const std::string& path) {
    std::filesystem::create_directories(root_.string() + path);
  }
  void remove(const std::string& path) { std::filesystem::remove_all(root_.string() + path); }
  std::string root() const { return root_.string(); }

 private:
  std::filesystem::path root_;
};

}  // namespace xftest
