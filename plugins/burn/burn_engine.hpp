// A burn: every selected GPU multiplies the same two random matrices again and again, all GPUs at
// once, each from its own host thread on its own stream, for a set time. Each GPU fills a share
// of its free memory with result buffers and writes them in turn, so memory is exercised too.
//
// Errors are found two ways. Every product is compared bit for bit on the GPU with the first one,
// while the next product runs (the inputs and the cuBLASLt algorithm never change, so any
// difference is a wrong result: a flaky GPU). The first product itself is checked against a float64
// reference at sampled elements, so a GPU that is wrong the same way every time is caught too.
// Errors are counted per GPU and per window (~1 s of products, also the unit of the TFLOPS
// figures); NVML telemetry, ECC counts and Xid faults are read over the whole run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "burn_options.hpp"
#include "kernels/gemm.hpp"
#include "xfbench/dtype.hpp"
#include "xfbench/gpu_health.hpp"
#include "xfbench/telemetry.hpp"  // the SDK's NVML sampler (clocks, power, energy)

namespace xfbench::burn {

struct BurnConfig {
  Dtype dtype = Dtype::bf16;
  BurnShape shape;  // burn_shape(dtype) for real burns; tests make it small
  double seconds = 60;
  double mem_pct = 90;
  std::vector<int> devices;  // one worker (a slot) per entry; tests may name a device twice
  bool search = false;       // time cuBLASLt's candidates and keep the fastest
  InputRange inputs;         // A and B uniform in [lo, hi)
  int reference_samples = 1024;
  double window_seconds = 1;       // products are counted, checked and timed in windows this long
  double progress_seconds = 5;     // a progress line on stderr this often; <= 0: none
  std::string name;                // for progress lines ("Burn/tf32/seconds:60")
  std::size_t max_buffers = 0;     // 0: as many result buffers as mem_pct allows
  std::vector<Fault> faults;       // test hook
  std::vector<int> starved_slots;  // test hook: these slots find no free memory
  std::function<void()> on_start;  // called once, as the burn's clock starts (the CPU burn)
};

struct BurnWindow {
  double seconds = 0;  // GPU time between the window's CUDA events
  std::uint64_t products = 0;
  std::uint64_t mismatches = 0;  // elements that differed from the first product's
};

struct SlotResult {
  int slot = 0, device = 0;
  std::string name, uuid, pci_bus;
  std::string not_run;       // why this GPU did not burn ("" when it did)
  bool unsupported = false;  // not_run because the GPU lacks the dtype: skipped, not failed
  std::string failure;       // an error while burning (a fault of the GPU or its driver)
  std::string algo;          // the cuBLASLt kernel burned
  std::size_t buffers = 0;   // result buffers, the first product's included
  double mem_bytes = 0;      // device memory this burn held
  double flops_per_product = 0;
  double peak_tflops = 0;  // the dtype's peak on this GPU (0: unknown)
  std::vector<BurnWindow> windows;
  int reference_samples = 0;
  std::uint64_t reference_errors = 0;  // sampled elements off the float64 reference
  double reference_worst = 0;          // largest |GPU - float64| / RMS of the samples
  double t0 = 0, t1 = 0;               // host seconds of the first and last timed window
  TelemetryReading telemetry;          // over [t0, t1]
  EccCounts ecc_before, ecc_after;
  std::vector<std::uint64_t> xids;
  std::string xid_status;
};

struct BurnReport {
  Dtype dtype = Dtype::bf16;
  BurnShape shape;
  InputRange inputs;
  double seconds = 0;
  std::vector<SlotResult> slots;
};

// Runs the burn; a slot that cannot burn says why in its result while the others burn on.
BurnReport run_burn(const BurnConfig& config);

// The elements of the first product the float64 check samples (fixed: tests corrupt one).
std::vector<kernels::GemmSample> reference_positions(const BurnShape& shape, int count);

}  // namespace xfbench::burn
