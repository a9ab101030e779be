#include "parallel_case.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "kernels/comm/nccl_comm.hpp"
#include "kernels/comm/nccl_timer.hpp"
#include "kernels/gemm.hpp"
#include "parallel_validate.hpp"
#include "train_case.hpp"
#include "train_validate.hpp"
#include "xfbench/xfbench.hpp"

namespace xfbench::train {
namespace {

struct ParallelSpec {
  kernels::TrainConfig c;
  std::string one_gpu_name;  // the one-GPU case of the same configuration (`scaling`)
  Parallelism mode = Parallelism::dp;
  int gpus = 1;
  bool p2p = true;
  ParallelOptions options;
  std::string unsupported;
  std::string name;  // the case's
};

std::string describe(const ParallelTrainer& t) {
  std::string s = std::to_string(t.ranks()) + (t.ranks() == 1 ? " rank" : " ranks");
  if (kernels::mpi_enabled()) return s + " (MPI, one GPU per process)";
  s += " (one process, GPU";
  for (int i = 0; i < t.local_ranks(); ++i) s += " " + std::to_string(t.device(i));
  return s + ")";
}

void run_parallel_case(benchmark::State& state, const ParallelSpec& spec) {
  if (!spec.unsupported.empty()) XF_THROW(Unsupported, spec.unsupported);
  if (spec.p2p == p2p_disabled_by_environment())
    XF_THROW(Unsupported,
             spec.p2p ? std::string("p2p:on: this process runs with NCCL_P2P_DISABLE=1")
                      : std::string("p2p:off needs NCCL_P2P_DISABLE=1 in the environment (NCCL "
                                    "reads it once per process): run NCCL_P2P_DISABLE=1 xfbench "
                                    "--benchmark_filter='/p2p:off'"));
  const std::vector<int> devices =
      kernels::local_devices(spec.options.gpus, device_count(), spec.gpus);
  const kernels::TrainConfig c = parallel_config(spec.c, spec.mode, spec.gpus);
  // From here every rank joins the same collectives (one GPU per rank under MPI).
  kernels::collective_section(spec.name, [&] {
    std::string label;
    if (should_validate())
      label = "validated: " + validate_parallel(c, spec.mode, devices, spec.options.bucket_bytes);
    // Each GPU's memory counts its GEMM plans' workspaces: the validation's go first.
    kernels::clear_gemm_plans();
    std::vector<std::size_t> before;
    for (int d : devices) {
      OnDevice on(d);
      XF_CUDA_CHECK(cudaDeviceSynchronize());
      before.push_back(device_memory_used());
    }
    OnDevice on(devices.front());
    Stream stream;
    ParallelTrainer t(c, spec.mode, devices, spec.options.bucket_bytes);
    t.init_parameters(c.seed);
    for (int i = 0; i < t.local_ranks(); ++i) t.set_data(i, kernels::step_data(c, t.data_rank(i)));
    if (should_validate()) {
      label += "; " + kernels::agreed_validation([&] {
                 return validate_training([&] { t.step(stream); },
                                          [&] { return t.model(0).loss(stream); }, c.model.vocab,
                                          c.model.hidden);
               });
      t.init_parameters(c.seed);
    }
    if (spec.options.search) t.tune();
    const Timing timing = time_gpu(
        state, stream, [&](cudaStream_t s) { t.step(s); }, kernels::collective_timer_options());
    set_train_counters(state, timing, c, t.ranks());
    const ParallelTrainer::Overlap overlap = t.measure_overlap(stream);
    state.counters["comm_ms"] = overlap.comm_ms;
    state.counters["comm_hidden_pct"] = overlap.hidden_pct();
    double mem = 0;
    for (std::size_t i = 0; i < devices.size(); ++i) {
      OnDevice rank_device(devices[i]);
      mem = std::max(mem, double(device_memory_used()) - double(before[i]));
    }
    state.counters["mem_GB"] = mem / 1e9;
    const double one_gpu = recorded_samples_per_second(spec.one_gpu_name);
    if (one_gpu > 0)
      state.counters["scaling"] = state.counters["samples/s"] / (one_gpu * t.ranks());
    state.counters["loss"] = t.model(0).loss(stream);
    const std::string reduction = spec.mode == Parallelism::tp
                                      ? "all-reduces inside the blocks"
                                      : std::to_string(t.buckets().buckets.size()) + " buckets";
    add_label(state, describe(t) + "; " + reduction + (label.empty() ? "" : "; " + label));
  });
}

}  // namespace

std::string parallel_case_name(const kernels::TrainConfig& c, const std::string& model_tag,
                               Parallelism mode, int gpus, bool p2p) {
  CaseName n("TrainStep");
  n.add_segments(case_name(c, model_tag).substr(std::string("TrainStep").size()));
  if (mode == Parallelism::tp)  // its size, the GPU count (tp with dp is not implemented)
    n.add("tp", gpus);
  else
    n.add(to_string(mode));
  return n.add("gpus", gpus).add("p2p", p2p ? "on" : "off").str();
}

ParallelFlags parallel_flags(bool search) {
  kernels::init_at_registration();
  ParallelFlags f;
  for (const std::string& m : flag_list("train_parallel",
                                        "TrainStep multi-GPU variants of every configuration: dp, "
                                        "zero2, zero3 (weights sharded too), tp (tensor parallel "
                                        "over all the GPUs; default: dp, zero2 and tp, of the "
                                        "headline cases)")) {
    if (m != "dp" && m != "zero2" && m != "zero3" && m != "tp")
      XF_THROW(InvalidArgument, "--xfbench_train_parallel: '" + m +
                                    "' is not dp, zero2, zero3 or tp (tp's size is the GPU count)");
    f.modes.push_back(m == "dp"      ? Parallelism::dp
                      : m == "zero2" ? Parallelism::zero2
                      : m == "zero3" ? Parallelism::zero3
                                     : Parallelism::tp);
  }
  f.given = !f.modes.empty();
  if (!f.given) f.modes = {Parallelism::dp, Parallelism::zero2, Parallelism::tp};
  f.options.gpus = gpus_flag();
  const long mb = flag_int("train_bucket_mb", 25, "TrainStep dp/zero2 gradient bucket (MiB)");
  if (mb < 1 || mb > 4096) XF_THROW(InvalidArgument, "--xfbench_train_bucket_mb must be 1..4096");
  f.options.bucket_bytes = std::size_t(mb) << 20;
  f.options.search = search;
  f.ranks = kernels::mpi_enabled()    ? kernels::world_size()
            : !f.options.gpus.empty() ? int(f.options.gpus.size())
                                      : std::max(1, device_count());
  return f;
}

void add_parallel_cases(const kernels::TrainConfig& c, const std::string& model_tag,
                        const ParallelFlags& flags, Suite suite) {
  const bool env_p2p = !p2p_disabled_by_environment();
  for (Parallelism mode : flags.modes)
    for (bool p2p : {true, false})
      add_parallel_case(c, model_tag, mode, flags.ranks, p2p, flags.options,
                        flags.ranks >= 2 && p2p == env_p2p ? suite : Suite::extended);
}

bool p2p_disabled_by_environment() {
  const char* v = std::getenv("NCCL_P2P_DISABLE");
  return v && std::strcmp(v, "1") == 0;
}

void add_parallel_case(const kernels::TrainConfig& c, const std::string& model_tag,
                       Parallelism mode, int gpus, bool p2p, const ParallelOptions& options,
                       Suite suite) {
  ParallelSpec spec{c, case_name(c, model_tag), mode, gpus, p2p, options, ""};
  spec.name = parallel_case_name(c, model_tag, mode, gpus, p2p);
  spec.c = parallel_config(c, mode, gpus);
  try {
    kernels::check_train_config(spec.c);  // InvalidArgument propagates
  } catch (const Unsupported& e) {
    spec.unsupported = e.message();
  } catch (const InvalidArgument& e) {
    // tp: heads or FFN width that do not split over the GPUs; zero3: one GPU (the one-GPU case
    // checked the rest)
    if (mode != Parallelism::tp && mode != Parallelism::zero3) throw;
    spec.unsupported = e.message();
  }
  add_case(
      spec.name, [spec](benchmark::State& s) { run_parallel_case(s, spec); }, Needs::gpu, suite);
}

}  // namespace xfbench::train
