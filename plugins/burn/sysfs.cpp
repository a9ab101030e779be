#include "sysfs.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace xfbench::burn {
namespace {

// "hwmon10" after "hwmon9": the digits at the end compare as numbers.
bool numeric_less(const std::string& a, const std::string& b) {
  auto split = [](const std::string& s) {
    std::size_t d = s.size();
    while (d > 0 && s[d - 1] >= '0' && s[d - 1] <= '9') --d;
    return std::make_pair(s.substr(0, d), s.size() - d);
  };
  const auto [pa, na] = split(a);
  const auto [pb, nb] = split(b);
  if (pa != pb || na == nb) return a < b;
  return na < nb;
}

}  // namespace

SysFs::SysFs(std::string root) : root_(std::move(root)) {
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
}

std::string SysFs::where(const std::string& path) const {
  return root_ == "/" ? path : root_ + path;
}

SysRead SysFs::read(const std::string& path) const {
  SysRead r;
  const int fd = ::open(where(path).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    r.why = errno == ENOENT ? "absent" : std::string("unreadable (") + std::strerror(errno) + ")";
    return r;
  }
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      r.why = std::string("unreadable (") + std::strerror(errno) + ")";
      r.text.clear();
      ::close(fd);
      return r;
    }
    if (n == 0) break;
    r.text.append(buffer, std::size_t(n));
  }
  ::close(fd);
  while (!r.text.empty() && (r.text.back() == '\n' || r.text.back() == ' ')) r.text.pop_back();
  r.ok = true;
  return r;
}

bool SysFs::exists(const std::string& path) const {
  struct stat st;
  return ::stat(where(path).c_str(), &st) == 0;
}

std::vector<std::string> SysFs::list(const std::string& path, const std::string& prefix) const {
  std::vector<std::string> names;
  DIR* dir = ::opendir(where(path).c_str());
  if (!dir) return names;
  while (const dirent* e = ::readdir(dir)) {
    const std::string name = e->d_name;
    if (name != "." && name != ".." && name.compare(0, prefix.size(), prefix) == 0)
      names.push_back(name);
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end(), numeric_less);
  return names;
}

bool parse_number(const std::string& text, long long& out) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  out = std::strtoll(text.c_str(), &end, 10);
  return errno == 0 && end != text.c_str() && *end == '\0';
}

}  // namespace xfbench::burn
