#include "cpu_topology.hpp"

#include <sched.h>

#include <algorithm>
#include <cstdlib>

#include "xfbench/error.hpp"
#include "xfbench/flags.hpp"

namespace xfbench::burn {
namespace {

bool parse_cpu(const std::string& text, int& out) {
  long long v = 0;
  const bool digits = !text.empty() && std::all_of(text.begin(), text.end(),
                                                   [](char c) { return c >= '0' && c <= '9'; });
  if (!digits || text.size() > 9 || !parse_number(text, v) || v > kMaxCpu) return false;
  out = int(v);
  return true;
}

std::vector<int> missing_from(const std::vector<int>& wanted, const std::vector<int>& have) {
  std::vector<int> out;
  for (int c : wanted)
    if (!std::binary_search(have.begin(), have.end(), c)) out.push_back(c);
  return out;
}

}  // namespace

std::vector<int> parse_cpulist(const std::string& text, const std::string& what) {
  std::vector<int> cpus;
  std::size_t at = 0;
  while (at <= text.size()) {
    std::size_t end = text.find(',', at);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(at, end - at);
    const std::size_t dash = item.find('-');
    int lo = 0, hi = 0;
    const bool ok = dash == std::string::npos ? parse_cpu(item, lo) && parse_cpu(item, hi)
                                              : parse_cpu(item.substr(0, dash), lo) &&
                                                    parse_cpu(item.substr(dash + 1), hi);
    if (!ok || lo > hi) {
      XF_THROW(InvalidArgument, what + ": '" + item +
                                    "' is not a core or a range of cores (a cpulist as "
                                    "'0-31,64-95', cores 0 to " +
                                    std::to_string(kMaxCpu) + ")");
    }
    for (int c = lo; c <= hi; ++c) cpus.push_back(c);
    at = end + 1;
  }
  std::sort(cpus.begin(), cpus.end());
  const auto twice = std::adjacent_find(cpus.begin(), cpus.end());
  if (twice != cpus.end())
    XF_THROW(InvalidArgument, what + ": core " + std::to_string(*twice) + " named twice");
  return cpus;
}

std::string cpulist_text(const std::vector<int>& cpus) {
  std::string out;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    out += (out.empty() ? "" : ",") + std::to_string(cpus[i]);
    if (j > i) out += "-" + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

std::vector<int> online_cpus(const SysFs& sys) {
  const SysRead online = sys.read("/sys/devices/system/cpu/online");
  if (online.ok) {
    try {
      return parse_cpulist(online.text, "/sys/devices/system/cpu/online");
    } catch (const InvalidArgument&) {  // the folders below still say
    }
  }
  std::vector<int> cpus;
  for (const std::string& name : sys.list("/sys/devices/system/cpu", "cpu")) {
    int c = 0;
    if (parse_cpu(name.substr(3), c)) cpus.push_back(c);
  }
  std::sort(cpus.begin(), cpus.end());
  return cpus;
}

int package_of(const SysFs& sys, int cpu) {
  const SysRead r = sys.read("/sys/devices/system/cpu/cpu" + std::to_string(cpu) +
                             "/topology/physical_package_id");
  long long v = 0;
  return r.ok && parse_number(r.text, v) && v >= 0 ? int(v) : -1;
}

std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
  for (int size = 1024; size <= kMaxCpu * 2; size *= 2) {
    cpu_set_t* set = CPU_ALLOC(size);
    const std::size_t bytes = CPU_ALLOC_SIZE(size);
    if (sched_getaffinity(0, bytes, set) == 0) {
      for (int c = 0; c < size; ++c)
        if (CPU_ISSET_S(c, bytes, set)) cpus.push_back(c);
      CPU_FREE(set);
      return cpus;
    }
    CPU_FREE(set);  // EINVAL: the kernel's mask is larger; try twice the size
  }
  return cpus;
}

std::vector<int> choose_burn_cores(const std::vector<std::string>& items,
                                   const std::vector<int>& online,
                                   const std::vector<int>& allowed) {
  const std::string flag = "--xfbench_burn_cpu_cores";
  std::vector<int> cores;
  for (const std::string& item : items) {
    for (int c : parse_cpulist(item, flag)) cores.push_back(c);
  }
  std::sort(cores.begin(), cores.end());
  const auto twice = std::adjacent_find(cores.begin(), cores.end());
  if (twice != cores.end())
    XF_THROW(InvalidArgument, flag + ": core " + std::to_string(*twice) + " named twice");
  if (items.empty()) {
    for (int c : online)
      if (std::binary_search(allowed.begin(), allowed.end(), c)) cores.push_back(c);
    if (cores.empty())
      XF_THROW(InvalidArgument, "no core to burn: none online is in this process's affinity (" +
                                    cpulist_text(allowed) + ")");
    return cores;
  }
  if (const std::vector<int> absent = missing_from(cores, online); !absent.empty()) {
    XF_THROW(InvalidArgument, flag + "=" + cpulist_text(cores) + ": core" +
                                  (absent.size() > 1 ? "s " : " ") + cpulist_text(absent) +
                                  (absent.size() > 1 ? " do" : " does") +
                                  " not exist on this host (online: " + cpulist_text(online) + ")");
  }
  if (const std::vector<int> barred = missing_from(cores, allowed); !barred.empty()) {
    XF_THROW(InvalidArgument, flag + "=" + cpulist_text(cores) + ": core" +
                                  (barred.size() > 1 ? "s " : " ") + cpulist_text(barred) +
                                  " online but outside this process's affinity (" +
                                  cpulist_text(allowed) + ": taskset or a cgroup's cpuset)");
  }
  return cores;
}

}  // namespace xfbench::burn
