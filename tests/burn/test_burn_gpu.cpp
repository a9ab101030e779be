// Burn on the GPU (skipped without one). Faults injected into chosen products must be counted
// exactly, per worker and window, also when every product reuses one buffer; a first product that
// is wrong must be caught by the float64 reference check, also when every product is wrong the
// same way; a worker without memory says so while the other burns on; every dtype burns clean at
// its real size; and the host end to end.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "burn_engine.hpp"
#include "burn_report.hpp"
#include "test_gpu.hpp"
#include "test_host.hpp"

namespace {

using namespace xfbench::burn;
using xfbench::Dtype;

// Two workers on GPU 0 (slots 0 and 1: "per GPU" accounting on a one-GPU machine), small fp32
// products, a one-second burn in windows of 0.1 s.
BurnConfig small_burn() {
  BurnConfig c;
  c.dtype = Dtype::fp32;
  c.shape = {256, 192, 128};
  c.seconds = 1;
  c.mem_pct = 50;
  c.devices = {0, 0};
  c.window_seconds = 0.1;
  c.progress_seconds = 0;
  c.max_buffers = 6;
  c.name = "test";
  return c;
}

// Flipping the top exponent bit of an fp32 moves it by at least its own size (or to a huge
// value): far outside any rounding tolerance.
constexpr unsigned kExponentTop = 30;

std::uint64_t products(const SlotResult& s) {
  std::uint64_t n = 0;
  for (const BurnWindow& w : s.windows) n += w.products;
  return n;
}

// The window holding product p (product 0 is the first, checked before the windows).
std::size_t window_of(const SlotResult& s, std::uint64_t p) {
  std::uint64_t first = 1;
  for (std::size_t i = 0; i < s.windows.size(); ++i) {
    if (p < first + s.windows[i].products) return i;
    first += s.windows[i].products;
  }
  return s.windows.size();
}

// Faults injected into products of both workers, each comparison running beside the next
// product: every flipped element is counted once, in the window of its product.
void expect_injected_faults_counted(BurnConfig c) {
  c.faults = {
      {0, 3, 17, 0}, {0, 5, 1, kExponentTop}, {0, 5, 2, 7}, {1, 4, 100, 5}, {0, 40, 190, 31}};
  const BurnReport r = run_burn(c);
  ASSERT_EQ(r.slots.size(), 2u);
  const SlotResult &a = r.slots[0], &b = r.slots[1];
  ASSERT_TRUE(burned(a) && burned(b)) << a.not_run << b.not_run;
  ASSERT_GT(products(a), 40u);
  ASSERT_GT(products(b), 4u);
  EXPECT_EQ(mismatches(a), 4u);  // every flipped element, once: a lowest mantissa bit too
  EXPECT_EQ(mismatches(b), 1u);
  EXPECT_EQ(a.reference_errors, 0u);
  EXPECT_EQ(b.reference_errors, 0u);
  EXPECT_EQ(verdict(a), "FAULTY (4 errors)");
  EXPECT_EQ(verdict(b), "FAULTY (1 error)");
  // Each error in the window of its product.
  std::vector<std::uint64_t> expected(a.windows.size(), 0);
  for (std::uint64_t p : {3, 5, 5, 40}) ++expected[window_of(a, p)];
  for (std::size_t w = 0; w < a.windows.size(); ++w)
    EXPECT_EQ(a.windows[w].mismatches, expected[w]) << "window " << w;
  EXPECT_EQ(b.windows[window_of(b, 4)].mismatches, 1u);
  EXPECT_GE(a.buffers, 2u);
  EXPECT_LE(a.buffers, c.max_buffers);
}

TEST(BurnGpu, InjectedFaultsAreCountedPerWorker) {
  SKIP_WITHOUT_GPU();
  expect_injected_faults_counted(small_burn());
}

// Two buffers: every product after the first is written into buffer 1. The products fill the
// GPU, so a comparison (at the lower priority) that did not wait would run only once the next
// product had overwritten the flipped bits.
TEST(BurnGpu, InjectedFaultsAreCountedWithOneBufferReused) {
  SKIP_WITHOUT_GPU();
  BurnConfig c = small_burn();
  c.shape = {2048, 2048, 2048};
  c.max_buffers = 2;
  expect_injected_faults_counted(c);
}

TEST(BurnGpu, CleanBurnIsOk) {
  SKIP_WITHOUT_GPU();
  const BurnReport r = run_burn(small_burn());
  for (const SlotResult& s : r.slots) {
    EXPECT_EQ(verdict(s), "OK");
    EXPECT_EQ(errors(s), 0u);
    EXPECT_GT(s.windows.size(), 3u);
    EXPECT_LT(s.reference_worst, reference_tolerance(Dtype::fp32));
    EXPECT_GT(tflops_summary(s).overall, 0);
  }
}

// One worker whose products from the first on have the top exponent bit of an element the
// float64 check samples flipped: in the first product only, or in every product.
SlotResult burn_with_sampled_fault(bool every_product) {
  BurnConfig c = small_burn();
  c.devices = {0};
  const xfbench::kernels::GemmSample at = reference_positions(c.shape, c.reference_samples)[5];
  const std::size_t element = std::size_t(at.row * c.shape.n + at.col);
  c.faults = {{0, 0, element, kExponentTop, every_product}};
  return run_burn(c).slots[0];
}

TEST(BurnGpu, WrongFirstProductIsCaughtByTheReference) {
  SKIP_WITHOUT_GPU();
  const SlotResult s = burn_with_sampled_fault(false);
  EXPECT_EQ(s.reference_errors, 1u);
  // Every later (right) product now differs from the wrong first one in that element.
  EXPECT_EQ(mismatches(s), products(s));
  EXPECT_TRUE(faulty(s));
}

TEST(BurnGpu, ConsistentlyWrongGpuIsCaughtByTheReference) {
  SKIP_WITHOUT_GPU();
  const SlotResult s = burn_with_sampled_fault(true);
  EXPECT_EQ(mismatches(s), 0u);  // the comparison alone cannot see it: products agree
  EXPECT_EQ(s.reference_errors, 1u);
  EXPECT_EQ(verdict(s), "FAULTY (1 error, 1 of them against the float64 reference)");
}

TEST(BurnGpu, WorkerWithoutMemorySaysWhyWhileTheOtherBurns) {
  SKIP_WITHOUT_GPU();
  BurnConfig c = small_burn();
  c.starved_slots = {1};
  const BurnReport r = run_burn(c);
  EXPECT_EQ(verdict(r.slots[0]), "OK");
  EXPECT_FALSE(burned(r.slots[1]));
  EXPECT_EQ(r.slots[1].not_run.rfind("out of memory: 50% of the 0.00 GB free holds", 0), 0u)
      << r.slots[1].not_run;
  for (const auto& [name, value] : burn_counters(r)) {
    if (name == "gpus_not_run") EXPECT_EQ(value, 1);
    if (name == "gpus") EXPECT_EQ(value, 1);
  }
}

// Every dtype at its real size, a few seconds each with a quarter of the memory: no errors, the
// first product within its float64 tolerance (the margin is printed), telemetry read. Then
// gpu-burn's inputs, [0, 10), for its modes (fp64, fp32, tf32): the same bounds hold.
void expect_clean_burn(Dtype t, BurnInputs inputs) {
  BurnConfig c;
  c.dtype = t;
  c.shape = burn_shape(t);
  c.seconds = 3;
  c.mem_pct = 25;
  c.devices = {0};
  c.progress_seconds = 1;
  c.inputs = input_range(inputs, t);
  c.name = burn_case_name(t, c.seconds);
  const BurnReport r = run_burn(c);
  const SlotResult& s = r.slots[0];
  std::fprintf(stderr, "%s\n  inputs in [%g, %g): reference worst %.3g of RMS (tolerance %.3g)\n",
               summary_line(c.name, s).c_str(), c.inputs.lo, c.inputs.hi, s.reference_worst,
               reference_tolerance(t));
  if (s.unsupported) return;
  EXPECT_EQ(verdict(s), "OK") << to_string(t);
  EXPECT_LT(s.reference_worst, reference_tolerance(t) / 3) << to_string(t) << ": tight margin";
  EXPECT_GT(tflops_summary(s).overall, 1) << to_string(t);
  EXPECT_GT(s.buffers, 10u);
  EXPECT_GT(s.telemetry.samples, 0) << xfbench::telemetry_status();
}

TEST(BurnGpu, EveryDtypeBurnsClean) {
  SKIP_WITHOUT_GPU();
  for (Dtype t : parse_burn_dtypes({})) expect_clean_burn(t, BurnInputs::signed_unit);
}

TEST(BurnGpu, GpuBurnInputsBurnClean) {
  SKIP_WITHOUT_GPU();
  for (Dtype t : {Dtype::fp64, Dtype::fp32, Dtype::tf32})
    expect_clean_burn(t, BurnInputs::gpu_burn);
}

TEST(BurnGpu, HostInventoryAndGpuRange) {
  SKIP_WITHOUT_GPU();
  const xftest::HostResult inv = xftest::run_host("--xfbench_devices");
  EXPECT_EQ(inv.code, 0) << inv.err;
  EXPECT_NE(inv.out.find("\nGPU0  "), std::string::npos) << inv.out;
  EXPECT_NE(inv.out.find("\nLinks (as nvidia-smi topo -m)\n"), std::string::npos);
  std::fprintf(stderr, "%s", inv.out.c_str());
  const int n = xfbench::device_count();
  const xftest::HostResult far =
      xftest::run_host("--benchmark_filter=Burn --xfbench_gpus=" + std::to_string(n));
  EXPECT_EQ(far.code, 2) << far.err;
  EXPECT_NE(far.err.find("is out of range"), std::string::npos) << far.err;
}

double json_number(const std::string& json, const std::string& key) {
  const std::size_t at = json.find("\"" + key + "\": ");
  return at == std::string::npos ? -1 : std::stod(json.substr(at + key.size() + 4));
}

// A short burn through the host: its JSON holds the verdict per GPU; an injected fault makes
// the GPU faulty and the exit code 5.
TEST(BurnGpu, HostBurnJsonAndFaultyExitCode) {
  SKIP_WITHOUT_GPU();
  const std::string json = "/tmp/xftest_burn_" + std::to_string(::getpid()) + ".json";
  const std::string args =
      "--benchmark_filter=Burn/fp16 --xfbench_burn_dtypes=fp16 "
      "--xfbench_burn_seconds=2 --xfbench_burn_mem_pct=10 --xfbench_gpus=0 "
      "--benchmark_out_format=json --benchmark_out=" +
      json;
  const xftest::HostResult ok = xftest::run_host(args);
  EXPECT_EQ(ok.code, 0) << ok.err;
  std::string out = xftest::slurp(json);
  EXPECT_EQ(json_number(out, "gpu0_errors"), 0) << out;
  EXPECT_EQ(json_number(out, "faulty_gpus"), 0);
  EXPECT_GT(json_number(out, "gpu0_TFLOPS_median"), 1);
  EXPECT_NE(out.find("\"label\": \"gpu0 OK; algo="), std::string::npos) << out;
  EXPECT_NE(ok.err.find("Burn/fp16/seconds:2 gpu0 "), std::string::npos) << ok.err;

  const xftest::HostResult bad =
      xftest::run_host(args, std::string(kFaultVariable) + "=0:2:7:14,0:9:8:3");
  EXPECT_EQ(bad.code, 5) << bad.err;
  out = xftest::slurp(json);
  EXPECT_EQ(json_number(out, "gpu0_errors"), 2) << out;
  EXPECT_EQ(json_number(out, "faulty_gpus"), 1);
  EXPECT_NE(out.find("\"label\": \"gpu0 FAULTY (2 errors)"), std::string::npos) << out;
  std::remove(json.c_str());
}

}  // namespace
