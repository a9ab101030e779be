#include "burn_options.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "cpu_topology.hpp"
#include "xfbench/device.hpp"
#include "xfbench/error.hpp"
#include "xfbench/flags.hpp"
#include "xfbench/names.hpp"

namespace xfbench::burn {
namespace {
std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}
}  // namespace

void check_seconds(double seconds) {
  if (!(seconds > 0)) {
    XF_THROW(InvalidArgument, "--xfbench_burn_seconds=" + number(seconds) +
                                  ": a burn lasts a positive number of seconds");
  }
}

void check_mem_pct(double pct) {
  if (!(pct >= 1 && pct <= 95)) {
    XF_THROW(InvalidArgument,
             "--xfbench_burn_mem_pct=" + number(pct) +
                 ": expected 1 to 95 (percent of free memory; above 95 leaves the driver and "
                 "cuBLAS too little)");
  }
}

std::vector<Dtype> parse_burn_dtypes(const std::vector<std::string>& items) {
  std::vector<Dtype> dtypes;
  for (const std::string& item : items) {
    try {
      dtypes.push_back(parse_dtype(item));
    } catch (const InvalidArgument& e) {
      XF_THROW(InvalidArgument, "--xfbench_burn_dtypes: " + e.message());
    }
  }
  if (dtypes.empty()) {
    dtypes = {Dtype::fp64, Dtype::fp32, Dtype::tf32, Dtype::bf16, Dtype::fp16, Dtype::fp8};
  }
  return dtypes;
}

BurnFlags read_burn_flags() {
  BurnFlags f;
  f.gpus = gpus_flag();
  f.seconds = flag_double("burn_seconds", 60, "seconds each Burn case burns every GPU");
  check_seconds(f.seconds);
  f.mem_pct = flag_double("burn_mem_pct", 90,
                          "percent of each GPU's free memory that Burn fills with result buffers "
                          "(1 to 95)");
  check_mem_pct(f.mem_pct);
  f.dtypes = parse_burn_dtypes(
      flag_list("burn_dtypes", "Burn dtypes (default fp64,fp32,tf32,bf16,fp16,fp8)"));
  f.search = flag_bool("burn_search", false,
                       "Burn: time cuBLASLt's candidate kernels on each GPU and burn the fastest "
                       "(default: cuBLASLt's first choice)");
  f.inputs = parse_burn_inputs(
      flag_string("burn_inputs", "signed",
                  "Burn inputs: signed (uniform in [-1, 1), default) or gpu-burn (fp64, fp32 "
                  "and tf32 uniform in [0, 10) as gpu-burn fills them)"));
  if (const char* faults = std::getenv(kFaultVariable)) f.faults = parse_faults(faults);
  f.cpu_cores = choose_burn_cores(
      flag_list("burn_cpu_cores",
                "Burn/cpu: the cores to burn, a cpulist as 0-31,64-95 (default every online "
                "core this process may run on)"),
      online_cpus(SysFs()), allowed_cpus());
  f.with_cpu = flag_bool("burn_cpu", false,
                         "Burn: burn the CPU cores (Burn/cpu's load) beside every GPU burn, in "
                         "the same window: the whole machine at once");
  if (const char* faults = std::getenv(kCpuFaultVariable)) f.cpu_faults = parse_cpu_faults(faults);
  f.host_mem_pct = double(flag_int("burn_host_mem_pct", 0,
                                   "Burn: test this share of the host's available RAM with moving "
                                   "inversion patterns beside every burn (0: off)",
                                   {0, 90, "percent"}));
  if (const char* faults = std::getenv(kMemFaultVariable)) f.mem_faults = parse_mem_faults(faults);
  f.compare = flag_bool("burn_compare", false,
                        "Burn: every GPU dtype alone, the CPU cores alone, then the GPUs and cores "
                        "together, which report each GPU's and socket's share of its alone rate");
  f.max_loss_pct = double(flag_int("burn_max_loss_pct", 3,
                                   "Burn: with burn_compare, flag GPUs that lose more than this "
                                   "share of their alone TFLOPS beside the CPU burn",
                                   {0, 100, "percent"}));
  if (f.compare) f.with_cpu = false;  // the together cases are registered apart
  return f;
}

BurnInputs parse_burn_inputs(const std::string& text) {
  if (text == "signed") return BurnInputs::signed_unit;
  if (text == "gpu-burn") return BurnInputs::gpu_burn;
  XF_THROW(InvalidArgument, "--xfbench_burn_inputs=" + text + ": expected signed or gpu-burn");
}

InputRange input_range(BurnInputs inputs, Dtype t) {
  const bool gpu_burn_mode = t == Dtype::fp64 || t == Dtype::fp32 || t == Dtype::tf32;
  if (inputs == BurnInputs::gpu_burn && gpu_burn_mode) return {0, 10};
  return {-1, 1};
}

namespace {

// Per dtype, the product's depth and layout and the float64 check's bound. fp32 and fp64 multiply
// in layout NN, as cublasSgemm/cublasDgemm in gpu-burn do: in NT, cuBLASLt's first fp32 kernel ran
// into the H100's power cap at 1908 MHz for 49.5 TFLOPS where gpu-burn's NN product ran 51.7.
// The tensor-core dtypes stay NT (K-major operands; fp8 has no other layout). The reference reads
// the same stored inputs, so what remains is accumulation and output rounding, relative to the RMS
// r of the samples (|element| stays below ~5r): fp64 ~1e-15; fp32 (k=16384) below 1e-5; tf32 rounds
// every input to 10 mantissa bits, ~7e-4 RMS and ~3e-3 for the worst of 1024 samples; fp16
// output rounding 2^-11·5r = 2.4e-3; bf16 output 2^-8·5r = 2e-2; fp8 accumulates with fewer bits
// between fp32 promotions and writes bf16: ~3e-2. Each bound is several times that, and still
// far below what a flipped sign or exponent bit does to a typical element (about r).
struct DtypeBurn {
  Dtype dtype;
  std::int64_t k;
  bool trans_b;
  double tolerance;
};
constexpr DtypeBurn kDtypeBurns[] = {
    {Dtype::fp64, 16384, false, 1e-9}, {Dtype::fp32, 16384, false, 1e-4},
    {Dtype::tf32, 32768, true, 2e-2},  {Dtype::fp16, 32768, true, 1e-2},
    {Dtype::bf16, 32768, true, 6e-2},  {Dtype::fp8, 65536, true, 1.5e-1},
};

const DtypeBurn& dtype_burn(Dtype t) {
  for (const DtypeBurn& d : kDtypeBurns)
    if (d.dtype == t) return d;
  XF_THROW(InvalidArgument, std::string("Burn has no ") + to_string(t) + " product");
}

}  // namespace

BurnShape burn_shape(Dtype t) {
  const DtypeBurn& d = dtype_burn(t);
  return {8192, 8192, d.k, d.trans_b};
}

double reference_tolerance(Dtype t) { return dtype_burn(t).tolerance; }

std::string burn_case_name(Dtype t, double seconds, bool with_cpu, double mem_pct) {
  CaseName n("Burn");
  n.add(to_string(t)).add("seconds", number(seconds));
  if (with_cpu) n.add("cpu", "on");
  if (mem_pct > 0) n.add("mem", number(mem_pct));
  return n.str();
}

std::string cpu_burn_case_name(double seconds, double mem_pct) {
  CaseName n("Burn");
  n.add("cpu").add("seconds", number(seconds));
  if (mem_pct > 0) n.add("mem", number(mem_pct));
  return n.str();
}

std::vector<CpuFault> parse_cpu_faults(const std::string& text) {
  std::vector<CpuFault> faults;
  for (const std::string& item : split(text, ',')) {
    const std::vector<std::string> f = split(item, ':');
    long v[2] = {};
    const bool ok = f.size() == 2 && detail::parse_long(f[0], v[0]) &&
                    detail::parse_long(f[1], v[1]) && v[0] >= 0 && v[0] <= kMaxCpu && v[1] >= 0;
    if (!ok)
      XF_THROW(InvalidArgument,
               std::string(kCpuFaultVariable) + ": '" + item + "' is not cpu:window");
    faults.push_back({int(v[0]), std::uint64_t(v[1])});
  }
  return faults;
}

std::vector<Fault> parse_faults(const std::string& text) {
  std::vector<Fault> faults;
  for (const std::string& item : split(text, ',')) {
    const std::vector<std::string> f = split(item, ':');
    const bool every = f.size() == 5 && f[4] == "every";
    bool ok = f.size() == 4 || every;
    unsigned long long v[4] = {};
    for (std::size_t i = 0; ok && i < 4; ++i) {
      char* end = nullptr;
      v[i] = std::strtoull(f[i].c_str(), &end, 10);
      ok = !f[i].empty() && f[i][0] != '-' && *end == '\0';
    }
    if (!ok) {
      XF_THROW(InvalidArgument, std::string(kFaultVariable) + ": '" + item +
                                    "' is not slot:product:element:bit[:every]");
    }
    faults.push_back({int(v[0]), v[1], std::size_t(v[2]), unsigned(v[3]), every});
  }
  return faults;
}

}  // namespace xfbench::burn
