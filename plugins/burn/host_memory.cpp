#include "host_memory.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <new>
#include <sstream>

#include "xfbench/error.hpp"

namespace xfbench::burn {
namespace {

using Clock = std::chrono::steady_clock;

// Keeps the compiler from carrying a written value into the next loop's check: every check reads
// memory.
inline void memory_barrier() { asm volatile("" ::: "memory"); }

std::uint64_t pattern(std::uint64_t pass) {
  switch (pass % 6) {
    case 0:
      return 0;
    case 1:
      return ~std::uint64_t(0);
    case 2:
      return 0x5555555555555555ULL;
    case 3:
      return 0xAAAAAAAAAAAAAAAAULL;
    case 4:
      return std::uint64_t(1) << (pass / 6 % 64);  // a walking one
    default: {  // splitmix64 of the pass: a word no earlier pass wrote
      std::uint64_t z = pass * 0x9E3779B97F4A7C15ULL;
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
      return z ^ (z >> 31);
    }
  }
}

}  // namespace

std::size_t available_memory_bytes(const std::string& proc_root) {
  std::ifstream in(proc_root + (proc_root.empty() || proc_root.back() != '/' ? "/" : "") +
                   "proc/meminfo");
  std::string key;
  std::size_t kib = 0;
  std::string unit;
  while (in >> key) {
    if (key == "MemAvailable:" && in >> kib) return kib * 1024;
    std::getline(in, unit);  // the rest of the line
  }
  return 0;
}

HostMemReport run_host_memory_test(const HostMemConfig& c) {
  HostMemReport r;
  std::size_t bytes = c.bytes;
  if (!bytes) {
    const std::size_t available = available_memory_bytes(c.proc_root);
    if (!available) {
      r.not_run = "no MemAvailable in " + c.proc_root + "proc/meminfo";
      return r;
    }
    bytes = std::size_t(double(available) * c.pct / 100.0);
  }
  const std::size_t words = bytes / sizeof(std::uint64_t);
  if (words == 0) {
    r.not_run = "no memory to test";
    return r;
  }
  std::unique_ptr<std::uint64_t[]> buf(new (std::nothrow) std::uint64_t[words]);
  if (!buf) {
    r.not_run = "cannot allocate " + std::to_string(bytes >> 20) + " MiB";
    return r;
  }
  r.bytes = words * sizeof(std::uint64_t);
  std::uint64_t* m = buf.get();
  const auto start = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  do {
    const std::uint64_t p = pattern(r.passes), q = ~p;
    std::fill(m, m + words, p);
    for (const HostMemFault& f : c.faults)
      if (f.pass == r.passes && f.word < words) m[f.word] ^= 1;
    memory_barrier();
    for (std::size_t i = 0; i < words; ++i) {
      r.errors += m[i] != p;
      m[i] = q;
    }
    memory_barrier();
    for (std::size_t i = words; i-- > 0;) {
      r.errors += m[i] != q;
      m[i] = p;
    }
    memory_barrier();
    ++r.passes;
  } while (elapsed() < c.seconds || r.passes < c.min_passes);
  r.seconds = elapsed();
  r.gb_per_s = 5.0 * double(r.bytes) * double(r.passes) / r.seconds / 1e9;  // 1 + 2 + 2 sweeps
  return r;
}

std::vector<std::pair<std::string, double>> host_memory_counters(const HostMemReport& r) {
  if (!r.not_run.empty()) return {};
  return {{"host_mem_GB", r.bytes / 1e9},
          {"host_mem_passes", double(r.passes)},
          {"host_mem_errors", double(r.errors)},
          {"host_mem_GB/s", r.gb_per_s}};
}

std::string host_memory_label(const HostMemReport& r) {
  char buf[128];
  if (!r.not_run.empty()) return "host memory NOT RUN (" + r.not_run + ")";
  if (r.errors)
    std::snprintf(buf, sizeof buf, "host memory FAULTY (%llu error%s in %.1f GB)",
                  static_cast<unsigned long long>(r.errors), r.errors == 1 ? "" : "s",
                  r.bytes / 1e9);
  else
    std::snprintf(buf, sizeof buf, "host memory OK (%.1f GB, %llu passes)", r.bytes / 1e9,
                  static_cast<unsigned long long>(r.passes));
  return buf;
}

std::vector<HostMemFault> parse_mem_faults(const std::string& text) {
  std::vector<HostMemFault> out;
  std::stringstream items(text);
  std::string item;
  while (std::getline(items, item, ',')) {
    HostMemFault f;
    char colon = 0, extra = 0;
    std::istringstream in(item);
    if (!(in >> f.pass >> colon >> f.word) || colon != ':' || in >> extra)
      XF_THROW(InvalidArgument,
               std::string(kMemFaultVariable) + ": '" + item + "' is not pass:word");
    out.push_back(f);
  }
  return out;
}

}  // namespace xfbench::burn
