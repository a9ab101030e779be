#include "xfbench/case.hpp"

#include <cuda_runtime_api.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <set>

#include "xfbench/detail/host.hpp"
#include "xfbench/device.hpp"
#include "xfbench/error.hpp"
#include "xfbench/flags.hpp"
#include "xfbench/memory.hpp"
#include "xfbench/timer.hpp"
#include "xfbench/validate.hpp"

namespace xfbench {
namespace {

struct CaseState {
  std::string name;
  Needs needs;
  Suite suite;
  CaseBody body;
  bool validated = false;
  // A run that ended without a number (its message, and whether it counts as a failure): every
  // later repetition of the case ends the same way at once (finish_skipped says why).
  std::string ended;
  bool ended_failed = false;
};

std::vector<detail::CaseRecord>& records() {
  static std::vector<detail::CaseRecord> r;
  return r;
}
std::string g_plugin = "xfbench";
std::atomic<std::size_t> g_failed{0};
std::atomic<bool> g_faulty_gpu{false}, g_gpu_not_run{false};
std::atomic<bool> g_broken{false};
std::string g_broken_reason;
thread_local CaseState* t_current = nullptr;
detail::CaseSelection g_selection;
std::mutex g_left_out_mu;
std::map<std::string, std::size_t> g_left_out;

// Whether a case of `suite` reaches Google Benchmark under the run's selection.
bool included(const std::string& name, Suite suite) {
  switch (suite) {
    case Suite::core:
      return true;
    case Suite::extended:
      return g_selection.filter_given || g_selection.all;
    case Suite::on_request:
      return g_selection.filter_given &&
             g_selection.filter.find(detail::family_of(name)) != std::string::npos;
  }
  return false;
}

std::vector<std::shared_ptr<CaseState>>& pending() {
  static std::vector<std::shared_ptr<CaseState>> p;
  return p;
}

thread_local CaseState* t_running = nullptr;  // the case run_case is running

// Ends this run without a number: a failure (counted: exit code 1) or a skip.
void end_run(benchmark::State& state, const std::string& message, bool failed) {
  if (failed) ++g_failed;
  if (t_running) t_running->ended = message, t_running->ended_failed = failed;
  state.SkipWithError(message.c_str());
}
void fail(benchmark::State& state, const std::string& message) { end_run(state, message, true); }
void skip(benchmark::State& state, const std::string& message) { end_run(state, message, false); }

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

// The case's phase marks (mark_phase), when XFBENCH_PHASES asks for them.
struct Phases {
  bool on = false;
  std::chrono::steady_clock::time_point last;
  std::string text;
};
thread_local Phases t_phases;

bool phases_wanted() {
  static const bool on = [] {
    const char* v = std::getenv("XFBENCH_PHASES");
    return v && *v && std::string(v) != "0";
  }();
  return on;
}

// Google Benchmark 1.7 cannot summarise repetitions of one case of which some ended without a
// number and some did not: it aborts when their iteration counts differ (a run skipped before its
// timed loop reports 0), and dereferences a null pointer when the first one is the one without
// (statistics.cc, ComputeStats): a check failing in one repetition and not in another crashed the
// host. So a case that ended without a number ends every later repetition the same way
// (CaseState::ended), and a run skipped before its loop goes through it once, empty (after
// SkipWithError no iteration runs), reporting the count its repetitions share.
void finish_skipped(benchmark::State& state) {
  if (state.error_occurred() && state.iterations() == 0)
    for (auto _ : state) {
    }
}

void run_case(benchmark::State& state, CaseState& c) {
  if (!c.ended.empty()) {  // an earlier repetition ended without a number
    if (c.ended_failed) ++g_failed;
    state.SkipWithError(c.ended.c_str());
    return;
  }
  t_running = &c;
  struct Done {
    ~Done() { t_running = nullptr; }
  } done;
  t_phases = Phases{phases_wanted(), std::chrono::steady_clock::now(), {}};
  struct PrintPhases {
    const std::string& name;
    ~PrintPhases() {
      if (!t_phases.on) return;
      mark_phase("end");
      std::fprintf(stderr, "xfbench phases: %s: %s\n", name.c_str(), t_phases.text.c_str());
      t_phases.on = false;
    }
  } print{c.name};
  if (c.needs == Needs::gpu) {
    if (!gpu_unavailable_reason().empty()) {  // the host has said so once and exits 4
      return skip(state, "no usable GPU: " + gpu_unavailable_reason());
    }
    if (g_broken) return fail(state, "skipped: " + g_broken_reason);
    cudaSetDevice(selected_device());
    reset_device_memory_peak();
  }
  t_current = &c;
  detail::reset_label();
  try {
    c.body(state);
    if (!state.error_occurred()) {
      c.validated = true;
      // A case whose memory is not in DeviceBuffers (a layer's own allocations) sets mem_GB itself.
      if (c.needs == Needs::gpu && !state.counters.count("mem_GB")) {
        state.counters["mem_GB"] = device_memory_peak() / 1e9;
      }
    }
  } catch (const LeftOut& e) {
    {
      std::lock_guard<std::mutex> lock(g_left_out_mu);
      ++g_left_out[e.message()];
    }
    skip(state, detail::kLeftOutPrefix + e.message());  // the host hides it
  } catch (const ValidationError& e) {
    fail(state, "validation failed: " + e.message());
  } catch (const Unsupported& e) {
    skip(state, "unsupported: " + e.message());  // not a failure
  } catch (const InvalidArgument& e) {
    fail(state, "invalid: " + e.message());
  } catch (const CudaError& e) {
    check_context(c, e);
    fail(state, e.what());
  } catch (const std::bad_alloc&) {
    fail(state, "out of host memory");
  } catch (const std::exception& e) {
    fail(state, e.what());
  } catch (...) {  // whatever a plugin throws, the case fails and the run goes on
    fail(state, "unknown exception (not a std::exception)");
  }
  t_current = nullptr;
}

}  // namespace

void mark_phase(const char* phase) {
  if (!t_phases.on) return;
  const auto now = std::chrono::steady_clock::now();
  char buf[96];
  std::snprintf(buf, sizeof buf, "%s%s %.2f s", t_phases.text.empty() ? "" : ", ", phase,
                std::chrono::duration<double>(now - t_phases.last).count());
  t_phases.text += buf;
  t_phases.last = now;
}

void add_case(const std::string& name, CaseBody body, Needs needs, Suite suite) {
  if (name.empty()) XF_THROW(InvalidArgument, "a case needs a name");
  pending().push_back(std::make_shared<CaseState>(CaseState{name, needs, suite, std::move(body)}));
}

void add_case(const std::string& name, CaseBody body, Needs needs) {
  add_case(name, std::move(body), needs, Suite::core);
}

void report_faulty_device() { g_faulty_gpu = true; }
void report_device_not_run() { g_gpu_not_run = true; }

bool should_validate() { return validation_enabled() && !(t_current && t_current->validated); }

namespace detail {
void set_registering_plugin(const std::string& name) { g_plugin = name; }
const std::string& registering_plugin() { return g_plugin; }
const std::vector<CaseRecord>& registered_cases() { return records(); }

std::size_t commit_pending_cases() {
  // One name, one case: a repeated name would be timed twice and read as repetitions.
  static std::set<std::string> names;
  std::set<std::string> fresh;
  for (const std::shared_ptr<CaseState>& c : pending()) {
    if (names.count(c->name) || !fresh.insert(c->name).second) {
      XF_THROW(InvalidArgument, "case " + c->name + " is registered twice (by " + g_plugin +
                                    "; a value repeated in a flag's list?)");
    }
  }
  names.insert(fresh.begin(), fresh.end());
  std::size_t n = pending().size();
  for (std::shared_ptr<CaseState>& c : pending()) {
    const bool registered = included(c->name, c->suite);
    records().push_back(CaseRecord{c->name, g_plugin, c->needs, c->suite, registered});
    if (!registered) continue;
    auto* b = benchmark::RegisterBenchmark(c->name.c_str(), [c](benchmark::State& s) {
      run_case(s, *c);
      finish_skipped(s);
    });
    if (c->needs == Needs::gpu) {
      b->UseManualTime()->Unit(benchmark::kMicrosecond)->Iterations(gpu_iterations());
    }
  }
  pending().clear();
  return n;
}

void discard_pending_cases() { pending().clear(); }
std::size_t failed_case_count() { return g_failed.load(); }
bool faulty_device_reported() { return g_faulty_gpu.load(); }
bool device_not_run_reported() { return g_gpu_not_run.load(); }
bool cuda_context_broken() { return g_broken.load(); }
std::string run_name(const CaseRecord& c) {
  if (c.needs == Needs::cpu) return c.name;
  return c.name + "/iterations:" + std::to_string(gpu_iterations()) + "/manual_time";
}
int gpu_iterations() {
  static const int n = [] {
    long v = flag_int("iterations", 20,
                      "hot and cold modes: timed iterations per repetition of a GPU case (each "
                      "a batch of launches); steady mode times one iteration per repetition");
    if (v < 1 || v > 1000000) XF_THROW(InvalidArgument, "--xfbench_iterations must be 1..1000000");
    return timing_mode() == TimingMode::steady ? 1 : int(v);
  }();
  return n;
}

void set_case_selection(const CaseSelection& s) { g_selection = s; }

std::string family_of(const std::string& case_name) {
  return case_name.substr(0, case_name.find('/'));
}

std::vector<std::pair<std::string, std::size_t>> left_out_counts() {
  std::lock_guard<std::mutex> lock(g_left_out_mu);
  return {g_left_out.begin(), g_left_out.end()};
}
}  // namespace detail

}  // namespace xfbench
