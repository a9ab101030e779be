// How GEMM kernels settle under the power cap, to learn how a search can rank them as the steady
// measurement does (issue 32: the Matmul search's steady final keeps one kernel in a suite and
// another alone, 2.7-2.9% apart in the steady state). For each shape, the search's finalists
// (cublasGemmEx, the incumbent, and the three fastest of ~2 ms bursts), after a few seconds of the
// incumbent (a GPU a suite has heated):
//   solo   each finalist alone for 2.5 s, twice in turn, timed in ~50 ms chunks with the chunk's
//          mean SM clock: how long a kernel takes to settle after another, and where it settles
//   rounds the search's steady final as it runs (each finalist `lead` untimed, then timed, in
//          alternating order) at 100 and 500 ms a round, five rounds
// Not a test and not the benchmark protocol: run by hand on the device; one JSON object a line.
//   gemm_settle_speed [--shapes=bf16:8192,fp16:8192,bf16:16384] [--out=file.jsonl]
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/gemm.hpp"
#include "launch_timing.hpp"
#include "speed_lines.hpp"
#include "xfbench/device.hpp"
#include "xfbench/memory.hpp"
#include "xfbench/telemetry.hpp"

namespace xk = xfbench::kernels;

namespace {

void shape(const xftest::JsonLines& out, xk::Precision p, int n) {
  xk::GemmDesc d;
  d.precision = p, d.m = n, d.n = n, d.k = n;
  const xfbench::Dtype dt = p == xk::Precision::bf16 ? xfbench::Dtype::bf16 : xfbench::Dtype::fp16;
  xfbench::DeviceMemory a(std::size_t(n) * n * 2), b(std::size_t(n) * n * 2),
      c(std::size_t(n) * n * 2);
  xfbench::fill_uniform(a.get(), std::size_t(n) * n, dt, 1, -1.0, 1.0, nullptr);
  xfbench::fill_uniform(b.get(), std::size_t(n) * n, dt, 2, -1.0, 1.0, nullptr);
  xk::Gemm& g = xk::gemm_plan(d);
  const xk::GemmOperands ops{a.get(), b.get(), c.get()};
  const xk::GemmTuneResult burst = g.tune(nullptr, ops);  // the bursts' seconds per candidate
  // Finalists as the search takes them: the incumbent, then the three fastest others.
  const int blas = g.algo_info(g.candidates() - 1).blas ? g.candidates() - 1 : 0;
  std::vector<int> order;
  for (int i = 0; i < g.candidates(); ++i)
    if (i != blas && burst.seconds[std::size_t(i)] < 1e30) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](int x, int y) {
    return burst.seconds[std::size_t(x)] < burst.seconds[std::size_t(y)];
  });
  std::vector<int> finalists{blas};
  for (std::size_t j = 0; j < order.size() && finalists.size() < 4; ++j)
    finalists.push_back(order[j]);
  const std::string name = std::string(xk::to_string(p)) + ":" + std::to_string(n);
  char line[512];
  for (int f : finalists) {
    std::snprintf(line, sizeof line,
                  "{\"shape\": \"%s\", \"finalist\": %d, \"algo\": \"%s\", \"burst_ms\": %.4f, "
                  "\"searched\": %d}",
                  name.c_str(), f, g.algo_info(f).label().c_str(),
                  burst.seconds[std::size_t(f)] * 1e3, int(f == g.selected()));
    out.write(line);
  }
  const double single_ms = burst.seconds[std::size_t(blas)] * 1e3;
  const int chunk = std::max(1, int(50 / single_ms));
  xfbench::TelemetrySampler telemetry(xfbench::selected_device());
  auto run_for = [&](int f, double seconds, const char* phase, int pass) {
    g.select(f);
    const double t0 = xfbench::host_seconds();
    double t_prev = t0;
    while (t_prev - t0 < seconds) {
      const double ms = xftest::time_ms([&] { g.run(nullptr, ops); }, chunk, 0);
      const double t1 = xfbench::host_seconds();
      const xfbench::TelemetryReading r = telemetry.read(t_prev, t1);
      t_prev = t1;
      if (!phase) continue;
      std::snprintf(line, sizeof line,
                    "{\"shape\": \"%s\", \"phase\": \"%s\", \"pass\": %d, \"finalist\": %d, "
                    "\"t\": %.3f, \"ms\": %.4f, \"sm_MHz\": %.0f, \"power_W\": %.0f}",
                    name.c_str(), phase, pass, f, t1 - t0, ms, r.sm_mhz, r.power_w);
      out.write(line);
    }
  };
  run_for(blas, 4.0, nullptr, 0);  // heat, as the suite's earlier cases leave the GPU
  for (int pass = 0; pass < 2; ++pass)
    for (int f : finalists) run_for(f, 2.5, "solo", pass);
  for (const double round_ms : {100.0, 500.0}) {
    const int reps = std::max(1, int(round_ms / single_ms));
    for (int round = 0; round < 5; ++round) {
      std::vector<int> turn = finalists;
      if (round % 2) std::reverse(turn.begin(), turn.end());
      for (int f : turn) {
        g.select(f);
        // The final's lead, untimed.
        xftest::time_ms([&] { g.run(nullptr, ops); }, std::max(1, reps / 2), 0);
        const double t0 = xfbench::host_seconds();
        const double ms = xftest::time_ms([&] { g.run(nullptr, ops); }, reps, 0);
        const xfbench::TelemetryReading r = telemetry.read(t0, xfbench::host_seconds());
        std::snprintf(line, sizeof line,
                      "{\"shape\": \"%s\", \"phase\": \"rounds\", \"round_ms\": %.0f, "
                      "\"round\": %d, \"finalist\": %d, \"ms\": %.4f, \"sm_MHz\": %.0f}",
                      name.c_str(), round_ms, round, f, ms, r.sm_mhz);
        out.write(line);
      }
    }
  }
  telemetry.stop(0, 0);
}

}  // namespace

int main(int argc, char** argv) {
  xftest::JsonLines out(argc, argv);
  std::string shapes = "bf16:8192";
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], "--shapes=", 9) == 0) shapes = argv[i] + 9;
  std::size_t at = 0;
  while (at < shapes.size()) {
    std::size_t end = shapes.find(',', at);
    if (end == std::string::npos) end = shapes.size();
    const std::string s = shapes.substr(at, end - at);
    at = end + 1;
    const std::size_t colon = s.find(':');
    const std::string type = s.substr(0, colon);
    const int n = colon == std::string::npos ? 8192 : std::stoi(s.substr(colon + 1));
    shape(out, type == "fp16" ? xk::Precision::fp16 : xk::Precision::bf16, n);
  }
  return 0;
}
