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

// Adds case `name` (Family/variant/.../key:value). GPU cases use manual (CUDA event) time in
// microseconds over a fixed number of timed iterations (--xfbench_iterations). Cases reach Google
// Benchmark only when the plugin's registration function returns: one that throws adds none.
void add_case(const std::string& name, CaseBody body, Needs needs = Needs::gpu);

}  // namespace xfbench
