// Which host cores a CPU burn uses and the socket each belongs to: Linux cpulists ("0-31,64-95",
// the format of /sys/devices/system/cpu/online and of taskset -c), the online cores, each core's
// package, and the cores this process may run on.
#pragma once

#include <string>
#include <vector>

#include "sysfs.hpp"

namespace xfbench::burn {

constexpr int kMaxCpu = 1 << 16;  // a CPU number above this is a typo, not a core

// "0-3,8,10-11" -> {0, 1, 2, 3, 8, 10, 11}, sorted. Throws InvalidArgument naming `what` (the flag
// or file) for an empty item, a reversed range, a number out of 0..kMaxCpu or a core named twice.
std::vector<int> parse_cpulist(const std::string& text, const std::string& what);
// {0, 1, 2, 3, 8, 10, 11} -> "0-3,8,10-11".
std::string cpulist_text(const std::vector<int>& cpus);

// The online cores (/sys/devices/system/cpu/online; when that is unreadable, the cpuN folders).
std::vector<int> online_cpus(const SysFs& sys);
// The socket of core `cpu` (topology/physical_package_id), or -1 when the kernel does not say.
int package_of(const SysFs& sys, int cpu);
// The cores this process may run on (sched_getaffinity: taskset, a cgroup's cpuset).
std::vector<int> allowed_cpus();

// The cores to burn: those `items` name (the items of --xfbench_burn_cpu_cores, each a cpulist),
// or when empty every online core this process may use. Throws InvalidArgument, before any
// work, for a malformed list, a core that is not online, or one outside the process's affinity.
std::vector<int> choose_burn_cores(const std::vector<std::string>& items,
                                   const std::vector<int>& online, const std::vector<int>& allowed);

}  // namespace xfbench::burn
