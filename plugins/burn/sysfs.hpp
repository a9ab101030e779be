// Every file the CPU burn reads from the kernel (/sys, /proc), through one reader with a root:
// "/" on a real host, a temporary folder holding a fake tree in the tests.
#pragma once

#include <string>
#include <vector>

namespace xfbench::burn {

// One read: the file's text with the trailing newline cut, or why there is none.
struct SysRead {
  bool ok = false;
  std::string text;
  std::string why;  // "absent" or "unreadable (Permission denied)"
};

class SysFs {
 public:
  explicit SysFs(std::string root = "/");
  // `path` is absolute as on the host ("/sys/class/hwmon/hwmon0/name").
  SysRead read(const std::string& path) const;
  bool exists(const std::string& path) const;
  // The entries of folder `path` whose names start with `prefix`, sorted as numbers sort
  // ("hwmon2" before "hwmon10"); empty when the folder is absent.
  std::vector<std::string> list(const std::string& path, const std::string& prefix = "") const;
  const std::string& root() const { return root_; }

 private:
  std::string where(const std::string& path) const;
  std::string root_;
};

// The whole number in `text` ("45000", "-3"); false for anything else.
bool parse_number(const std::string& text, long long& out);

}  // namespace xfbench::burn
