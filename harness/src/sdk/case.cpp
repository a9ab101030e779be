#include "xfbench/case.hpp"

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <mutex>
#include <new>

#include "xfbench/detail/host.hpp"
#include "xfbench/device.hpp"
#include "xfbench/error.hpp"
#include "xfbench/flags.hpp"
#include "xfbench/memory.hpp"
#include "xfbench/validate.hpp"

namespace xfbench {
namespace {

struct CaseState {
  std::string name;
  Needs needs;
  CaseBody body;
  bool validated = false;
};

std::vector<detail::CaseRecord>& records() {
  static std::vector<detail::CaseRecord> r;
  return r;
}
std::string g_plugin = "(host)";
std::atomic<std::size_t> g_failed{0};
std::atomic<bool> g_broken{false};
std::string g_broken_reason;
thread_local CaseState* t_current = nullptr;

std::vector<std::shared_ptr<CaseState>>& pending() {
  static std::vector<std::shared_ptr<CaseState>> p;
  return p;
}

void fail(benchmark::State& state, const std::string& message) {
  ++g_failed;
  state.SkipWithError(message.c_str());
}

// After a CUDA error: if the context no longer works, every later GPU case is skipped with one
// line.
void check_context(const CaseState& c, const CudaError& e) {
  cudaGetLastError();  // clears errors that are not sticky
  if (cudaDeviceSynchronize() == cudaSuccess && cudaGetLastError() == cudaSuccess) return;
  if (!g_broken.exchange(true)) {
    g_broken_reason = std::string("CUDA context broken by ") + cudaGetErrorName(e.code()) + " in " +
                      c.name + "; remaining GPU cases skipped (rerun them in a new process)";
    std::fprintf(stderr, "xfbench: %s\n", g_broken_reason.c_str());
  }
}

void run_case(benchmark::State& state, CaseState& c) {
  if (c.needs == Needs::gpu) {
    if (!gpu_unavailable_reason().empty()) {  // the host has said so once and exits 4
      state.SkipWithError(("no usable GPU: " + gpu_unavailable_reason()).c_str());
      return;
    }
    if (g_broken) return fail(state, "skipped: " + g_broken_reason);
    cudaSetDevice(selected_device());
    reset_device_memory_peak();
  }
  t_current = &c;
  try {
    c.body(state);
    if (!state.error_occurred()) {
      c.validated = true;
      // A case whose memory is not in DeviceBuffers (a layer's own allocations) sets mem_GB itself.
      if (c.needs == Needs::gpu && !state.counters.count("mem_GB")) {
        state.counters["mem_GB"] = device_memory_peak() / 1e9;
      }
    }
  } catch (const ValidationError& e) {
    fail(state, "validation failed: " + e.message());
  } catch (const Unsupported& e) {
    state.SkipWithError(("unsupported: " + e.message()).c_str());  // not a failure
  } catch (const InvalidArgument& e) {
    fail(state, "invalid: " + e.message());
  } catch (const CudaError& e) {
    check_context(c, e);
    fail(state, e.what());
  } catch (const std::bad_alloc&) {
    fail(state, "out of host memory");
  } catch (const std::exception& e) {
    fail(state, e.what());
  }
  t_current = nullptr;
}

}  // namespace

void add_case(const std::string& name, CaseBody body, Needs needs) {
  if (name.empty()) XF_THROW(InvalidArgument, "a case needs a name");
  pending().push_back(std::make_shared<CaseState>(CaseState{name, needs, std::move(body)}));
}

bool should_validate() { return validation_enabled() && !(t_current && t_current->validated); }

namespace detail {
void set_registering_plugin(const std::string& name) { g_plugin = name; }
const std::vector<CaseRecord>& registered_cases() { return records(); }

std::size_t commit_pending_cases() {
  std::size_t n = pending().size();
  for (std::shared_ptr<CaseState>& c : pending()) {
    records().push_back(CaseRecord{c->name, g_plugin, c->needs});
    auto* b = benchmark::RegisterBenchmark(c->name.c_str(),
                                           [c](benchmark::State& s) { run_case(s, *c); });
    if (c->needs == Needs::gpu) {
      b->UseManualTime()->Unit(benchmark::kMicrosecond)->Iterations(gpu_iterations());
    }
  }
  pending().clear();
  return n;
}

void discard_pending_cases() { pending().clear(); }
std::size_t failed_case_count() { return g_failed.load(); }
bool cuda_context_broken() { return g_broken.load(); }
std::string run_name(const CaseRecord& c) {
  if (c.needs == Needs::cpu) return c.name;
  return c.name + "/iterations:" + std::to_string(gpu_iterations()) + "/manual_time";
}
int gpu_iterations() {
  static const int n = [] {
    long v = flag_int("iterations", 20,
                      "timed iterations per repetition of a GPU case (each a batch of launches)");
    if (v < 1 || v > 1000000) XF_THROW(InvalidArgument, "--xfbench_iterations must be 1..1000000");
    return int(v);
  }();
  return n;
}
}  // namespace detail

}  // namespace xfbench
