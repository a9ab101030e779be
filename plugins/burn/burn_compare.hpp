// Alone against together (--xfbench_burn_compare): each GPU's TFLOPS and each socket's GFLOPS from
// the burns of this process that ran them alone, beside what they reached in the burn of the whole
// machine at once (GPUs, cores, host memory). A GPU that loses more than a stated share there
// points at the machine (power, cooling, a CPU that starves it), not at the GPU. Pure functions of
// the cases' counters, tested on made-up ones.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace xfbench::burn {

using Counters = std::map<std::string, double>;

// From the alone GPU burn's counters (gpu<N>_TFLOPS), the alone CPU burn's (socket<N>_GFLOPS) and
// the together burn's (gpu<N>_TFLOPS, cpu_socket<N>_GFLOPS): per device present in both,
// <device>_alone (its rate alone) and <device>_together_pct (together as a percent of alone).
std::vector<std::pair<std::string, double>> compare_counters(const Counters& gpu_alone,
                                                             const Counters& cpu_alone,
                                                             const Counters& together);

// "together/alone: gpu0 99.9%, socket0 104.6%"; a GPU below 100 - max_loss_pct adds
// "; GPUs LOSE beside the CPUs: gpu1 94.8% of alone (more than 3% lost)". Empty when nothing ran
// alone.
std::string compare_label(const std::vector<std::pair<std::string, double>>& counters,
                          double max_loss_pct);
// Whether a GPU lost more than max_loss_pct (the case's label says so; the run exits 0: the GPUs
// computed right, the machine is what is slow).
bool gpus_lose(const std::vector<std::pair<std::string, double>>& counters, double max_loss_pct);

}  // namespace xfbench::burn
