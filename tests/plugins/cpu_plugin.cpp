// A CPU-only plugin: lets CI exercise load -> register -> run -> JSON without a GPU.
#include <cmath>
#include <numeric>
#include <vector>

#include "xfbench/xfbench.hpp"

namespace {

// Sums a vector; declares its bytes and flops so the SDK's counters are exercised too.
void sum_case(benchmark::State& state, std::size_t n) {
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = 1.0f + float(i % 7);
  if (xfbench::should_validate()) {
    double expect = 0;
    for (float v : x) expect += v;
    double got = std::accumulate(x.begin(), x.end(), 0.0);
    xfbench::require_close("sum", {got}, {expect}, {1e-12});
  }
  xfbench::Timing t = xfbench::time_cpu(state, [&] {
    double sum = std::accumulate(x.begin(), x.end(), 0.0);
    benchmark::DoNotOptimize(sum);
  });
  xfbench::set_counters(state, t, {double(n), double(n * sizeof(float))});
}

void register_cases() {
  long n = xfbench::flag_int("cputest_n", 4096, "elements summed by the CPU test cases");
  if (n <= 0) XF_THROW(InvalidArgument, "--xfbench_cputest_n must be positive");
  xfbench::add_context_provider([] {
    return xfbench::ContextEntries{{"cputest_provider", "called"}};
  });
  xfbench::add_case(
      "CpuTest/sum/fp32/n:" + std::to_string(n),
      [n](benchmark::State& s) { sum_case(s, std::size_t(n)); }, xfbench::Needs::cpu);
  xfbench::add_case(
      "CpuTest/fails/validation",
      [](benchmark::State& state) {
        // A wrong result: fails validation, and runs only when validation is switched off.
        if (xfbench::should_validate()) xfbench::require_close("deliberate", {1.0}, {2.0}, {1e-6});
        xfbench::Timing t = xfbench::time_cpu(state, [] {});
        xfbench::set_counters(state, t, {1.0, 0.0});
      },
      xfbench::Needs::cpu);
  xfbench::add_case(
      "CpuTest/unsupported/here",
      [](benchmark::State&) { XF_THROW(Unsupported, "this case only says it cannot run here"); },
      xfbench::Needs::cpu);
  xfbench::add_case(
      "CpuTest/leftout/two_gpus",
      [](benchmark::State&) { XF_THROW(LeftOut, "need 2 GPUs, this machine has 1"); },
      xfbench::Needs::cpu);
  // A check that fails in one repetition and not in another (selected by a filter only): the
  // host reports the run without a number and goes on. Google Benchmark calls a CPU case with
  // growing iteration counts until it runs long enough, then every later repetition with the
  // same count: "third_repetition" fails at the second call that repeats a count (repetition 3),
  // "first_call" at its first.
  xfbench::add_case(
      "CpuTest/flaky/third_repetition",
      [](benchmark::State& s) {
        static benchmark::IterationCount last = -1;
        static int repeats = 0;
        const bool again = s.max_iterations == last;
        last = s.max_iterations;
        if (again && ++repeats == 2) XF_THROW(ValidationError, "deliberate: repetition 3 fails");
        sum_case(s, 64);
      },
      xfbench::Needs::cpu, xfbench::Suite::extended);
  xfbench::add_case(
      "CpuTest/flaky/first_call",
      [](benchmark::State& s) {
        static int calls = 0;
        if (++calls == 1) XF_THROW(ValidationError, "deliberate: the first call fails");
        sum_case(s, 64);
      },
      xfbench::Needs::cpu, xfbench::Suite::extended);
  // A sweep (runs only when a filter selects it) and an on-request soak (only when a filter
  // names its family), for the suite selection.
  for (int n : {8, 16}) {
    xfbench::add_case(
        "CpuTest/sweep/fp32/n:" + std::to_string(n),
        [n](benchmark::State& s) { sum_case(s, std::size_t(n)); }, xfbench::Needs::cpu,
        xfbench::Suite::extended);
  }
  xfbench::add_case(
      "CpuSoak/sum/n:64", [](benchmark::State& s) { sum_case(s, 64); }, xfbench::Needs::cpu,
      xfbench::Suite::on_request);
  xfbench::add_case("GpuTest/needs_gpu", [](benchmark::State& s) {
    for (auto _ : s) s.SetIterationTime(1e-6);
  });
}

}  // namespace

XFBENCH_PLUGIN("cputest", "1.0.0", "CPU-only cases for testing the host", register_cases)
