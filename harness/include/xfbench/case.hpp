// Registering cases. A plugin calls add_case() from its registration function; the SDK wraps the
// body so exceptions become one SkipWithError line, GPU cases check the device first, a broken CUDA
// context stops the remaining GPU cases, and peak memory and telemetry are reported per case.
#pragma once

#include <benchmark/benchmark.h>

#include <functional>
#include <string>

namespace xfbench {

enum class Needs { cpu, gpu };

using CaseBody = std::function<void(benchmark::State&)>;

// Which runs include a case:
//   core        the default suite (a run without --benchmark_filter: minutes on one GPU) and any
//               filter that matches it
//   extended    sweeps (every batch, size, dtype): only a filter that matches it, or
//               --xfbench_suite=all
//   on_request  minutes-long cases (Burn): only a filter that names the case's family
enum class Suite { core, extended, on_request };

// Adds case `name` (Family/variant/.../key:value), in the core suite unless said otherwise. GPU
// cases use manual (CUDA event) time in microseconds: one iteration per repetition in steady mode
// (the timer decides how long to measure), --xfbench_iterations in hot and cold modes. Cases reach
// Google Benchmark only when the plugin's registration function returns: one that throws adds none.
void add_case(const std::string& name, CaseBody body, Needs needs = Needs::gpu);
void add_case(const std::string& name, CaseBody body, Needs needs, Suite suite);

// What a case found about the devices it ran on (GPUs, CPU sockets), for the host's exit code
// (exit_codes.hpp): a device judged faulty (kFaultyGpu), or one that could not run its part at
// all (kCasesFailed). The case's counters and label say which device and why.
void report_faulty_device();
void report_device_not_run();

// Where a case's wall time goes (a developer's aid for the suite's length): with XFBENCH_PHASES=1
// in the environment, each case prints one line to stderr when it ends, the seconds between its
// marks ("xfbench phases: BertLayer/...: validate 2.31 s, setup 1.02 s, timed 6.10 s"). time_gpu
// marks "setup" when it starts timing and "timed" when it ends; a plugin marks its own phases
// (validation). Costs nothing otherwise.
void mark_phase(const char* phase);

}  // namespace xfbench
