// Burn's flags and the product each dtype burns. The flags are checked while the plugin registers,
// before any GPU work: a bad value is an InvalidArgument (the host exits 2 with the reason).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cpu_burn.hpp"     // CpuFault
#include "host_memory.hpp"  // HostMemFault
#include "kernels/gemm.hpp"
#include "xfbench/dtype.hpp"

namespace xfbench::burn {

// Test hook, a GPU that computes wrong: flips `bit` of element `element` of product `product`
// of worker `slot` as soon as it is computed, before any check reads it. With `every_product`,
// every product from `product` on is flipped the same way: a GPU consistently wrong, which only
// the float64 reference check can catch.
struct Fault {
  int slot = 0;
  std::uint64_t product = 0;
  std::size_t element = 0;
  unsigned bit = 0;
  bool every_product = false;
};

// The inputs' distribution. Uniform in [-1, 1) by default: signs that change toggle more bits,
// the harder load. `gpu_burn` fills fp64, fp32 and tf32 (gpu-burn's modes) as gpu-burn does,
// uniform in [0, 10), to compare like with like; the 16-bit and fp8 dtypes keep [-1, 1) (fp16
// results of [0, 10) products would overflow).
enum class BurnInputs { signed_unit, gpu_burn };
struct InputRange {
  double lo = -1, hi = 1;
};
BurnInputs parse_burn_inputs(const std::string& text);  // "signed" or "gpu-burn"
InputRange input_range(BurnInputs inputs, Dtype t);

struct BurnFlags {
  std::vector<int> gpus;      // --xfbench_gpus; empty: every visible GPU
  double seconds = 60;        // --xfbench_burn_seconds, per dtype
  double mem_pct = 90;        // --xfbench_burn_mem_pct: share of free memory given to results
  std::vector<Dtype> dtypes;  // --xfbench_burn_dtypes; default: all six
  bool search = false;        // --xfbench_burn_search: time cuBLASLt's candidates first
  BurnInputs inputs = BurnInputs::signed_unit;  // --xfbench_burn_inputs
  std::vector<Fault> faults;                    // XFBENCH_BURN_TEST_FAULTS (test hook)
  std::vector<int> cpu_cores;  // --xfbench_burn_cpu_cores; default: every core this process may use
  bool with_cpu = false;       // --xfbench_burn_cpu: the CPU burn beside every GPU burn
  std::vector<CpuFault> cpu_faults;  // XFBENCH_BURN_TEST_CPU_FAULTS (test hook)
  double host_mem_pct = 0;  // --xfbench_burn_host_mem_pct: the host-memory test beside (0: off)
  // --xfbench_burn_compare: each GPU dtype alone, the cores alone, then the GPUs with the cores;
  // the last say what each GPU and socket reached alone and flag GPUs that lose more than
  // --xfbench_burn_max_loss_pct beside the CPUs.
  bool compare = false;
  double max_loss_pct = 3;
  std::vector<HostMemFault> mem_faults;  // XFBENCH_BURN_TEST_MEM_FAULTS (test hook)
};

// Reads and checks every flag above. A GPU index is checked against the visible devices only
// where CUDA works (without a GPU the host says so itself); a core against the online ones and
// the process's affinity.
BurnFlags read_burn_flags();

// The checks, pure so the CPU tests call them; each names the flag and the reason.
void check_seconds(double seconds);
void check_mem_pct(double pct);
std::vector<Dtype> parse_burn_dtypes(const std::vector<std::string>& items);

// C[m,n] = A[m,k]·B[n,k]ᵀ (layout NT, the one fp8 needs) or A[m,k]·B[k,n] (NN). k grows as the
// product gets faster so the bitwise comparison of each product (one read of C and of the first
// product) stays near 1% of the time.
struct BurnShape {
  std::int64_t m = 8192, n = 8192, k = 8192;
  bool trans_b = true;  // B stored [n,k]
};
BurnShape burn_shape(Dtype t);

// The largest |GPU - float64| of a sampled element of the first product that counts as right,
// relative to the RMS of the float64 samples (see burn_options.cpp for the error budget).
double reference_tolerance(Dtype t);

// "Burn/tf32/seconds:60"; "Burn/tf32/seconds:60/cpu:on" with the CPU burn beside it
// (--xfbench_burn_cpu: another measurement, so another name); "/mem:10" with the host-memory test
// over 10% of the available RAM beside it.
std::string burn_case_name(Dtype t, double seconds, bool with_cpu = false, double mem_pct = 0);
// "Burn/cpu/seconds:60": every selected core, beside no GPU ("/mem:10" as above)
std::string cpu_burn_case_name(double seconds, double mem_pct = 0);

// The faults of XFBENCH_BURN_TEST_FAULTS, "slot:product:element:bit[:every],..." (tests of the
// whole program set it; nothing else should).
constexpr const char* kFaultVariable = "XFBENCH_BURN_TEST_FAULTS";
std::vector<Fault> parse_faults(const std::string& text);

// The CPU faults of XFBENCH_BURN_TEST_CPU_FAULTS, "cpu:window,..." (tests only, as above).
constexpr const char* kCpuFaultVariable = "XFBENCH_BURN_TEST_CPU_FAULTS";
std::vector<CpuFault> parse_cpu_faults(const std::string& text);

}  // namespace xfbench::burn
