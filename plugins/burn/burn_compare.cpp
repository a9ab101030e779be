#include "burn_compare.hpp"

#include <cstdio>

namespace xfbench::burn {
namespace {

// "gpu3_TFLOPS" -> "gpu3" for prefix "gpu" and suffix "_TFLOPS"; "" when it is not one.
std::string device_of(const std::string& name, const std::string& prefix,
                      const std::string& suffix) {
  if (name.size() <= prefix.size() + suffix.size() || name.compare(0, prefix.size(), prefix) != 0 ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
    return "";
  const std::string index = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  for (char ch : index)
    if (ch < '0' || ch > '9') return "";
  return prefix + index;
}

void add(std::vector<std::pair<std::string, double>>& out, const Counters& alone,
         const Counters& together, const std::string& prefix, const std::string& suffix,
         const std::string& together_prefix) {
  for (const auto& [name, rate] : alone) {
    const std::string device = device_of(name, prefix, suffix);
    if (device.empty() || rate <= 0) continue;
    auto it = together.find(together_prefix + name);
    if (it == together.end()) continue;
    out.emplace_back(device + "_alone", rate);
    out.emplace_back(device + "_together_pct", 100.0 * it->second / rate);
  }
}

}  // namespace

std::vector<std::pair<std::string, double>> compare_counters(const Counters& gpu_alone,
                                                             const Counters& cpu_alone,
                                                             const Counters& together) {
  std::vector<std::pair<std::string, double>> out;
  add(out, gpu_alone, together, "gpu", "_TFLOPS", "");
  add(out, cpu_alone, together, "socket", "_GFLOPS", "cpu_");
  return out;
}

bool gpus_lose(const std::vector<std::pair<std::string, double>>& counters, double max_loss_pct) {
  for (const auto& [name, value] : counters)
    if (name.compare(0, 3, "gpu") == 0 && name.size() > 13 &&
        name.compare(name.size() - 13, 13, "_together_pct") == 0 && value < 100.0 - max_loss_pct)
      return true;
  return false;
}

std::string compare_label(const std::vector<std::pair<std::string, double>>& counters,
                          double max_loss_pct) {
  std::string label, losing;
  char buf[96];
  for (const auto& [name, value] : counters) {
    const std::size_t cut = name.rfind("_together_pct");
    if (cut == std::string::npos || cut + 13 != name.size()) continue;
    const std::string device = name.substr(0, cut);
    std::snprintf(buf, sizeof buf, "%s %.1f%%", device.c_str(), value);
    label += (label.empty() ? "together/alone: " : ", ") + std::string(buf);
    if (device.compare(0, 3, "gpu") == 0 && value < 100.0 - max_loss_pct) {
      std::snprintf(buf, sizeof buf, "%s %.1f%% of alone", device.c_str(), value);
      losing += (losing.empty() ? "" : ", ") + std::string(buf);
    }
  }
  if (!losing.empty()) {
    std::snprintf(buf, sizeof buf, " (more than %g%% lost)", max_loss_pct);
    label += "; GPUs LOSE beside the CPUs: " + losing + buf;
  }
  return label;
}

}  // namespace xfbench::burn
