// Runs the built xfbench host from a test: exit code and what it printed.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
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

// `env` assignments go before the command, e.g. "CUDA_VISIBLE_DEVICES=".
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

}  // namespace xftest
