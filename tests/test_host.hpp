// Runs the built xfbench host from a test: exit code and what it printed.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string>

#include "test_paths.hpp"

namespace xftest {

struct HostResult {
  int code = -1;
  std::string out, err;
};

inline std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// Hides every GPU from the host (what registration and listing must do without one).
inline const std::string kNoGpu = "CUDA_VISIBLE_DEVICES=";

// `env` assignments go before the command, e.g. kNoGpu.
inline HostResult run_host(const std::string& args, const std::string& env = "") {
  static int n = 0;
  std::string base = "/tmp/xftest_" + std::to_string(::getpid()) + "_" + std::to_string(n++);
  std::string cmd = env + " " + host_bin() + " " + args + " >" + base + ".out 2>" + base + ".err";
  int status = std::system(cmd.c_str());
  HostResult r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(base + ".out");
  r.err = slurp(base + ".err");
  std::remove((base + ".out").c_str());
  std::remove((base + ".err").c_str());
  return r;
}

// The case names a host listing printed whose name starts with one of `prefixes`, one per line,
// without Google Benchmark's suffixes ("/iterations:20/manual_time").
inline std::string listed_names(const std::string& listing,
                                std::initializer_list<const char*> prefixes) {
  std::string out;
  std::size_t at = 0;
  while (at < listing.size()) {
    std::size_t end = listing.find('\n', at);
    if (end == std::string::npos) end = listing.size();
    std::string line = listing.substr(at, end - at);
    for (const char* suffix : {"/iterations:", "/repeats:", "/manual_time"})
      line = line.substr(0, line.find(suffix));
    for (const char* prefix : prefixes)
      if (line.rfind(prefix, 0) == 0) {
        out += line + "\n";
        break;
      }
    at = end + 1;
  }
  return out;
}

// The names the host lists for `args` (with no GPU visible) that start with `prefix`, one a line;
// a listing that does not exit 0 fails the calling test with its stderr.
inline std::string listing(const std::string& args, const char* prefix) {
  const HostResult r = run_host(args, kNoGpu);
  EXPECT_EQ(r.code, 0) << args << "\n" << r.err;
  return listed_names(r.out, {prefix});
}

}  // namespace xftest
