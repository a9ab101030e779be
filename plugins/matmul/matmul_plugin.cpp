// Matmul: cuBLASLt GEMM TFLOPS across dtypes, layouts and shapes (the seeds' first table), with a
// timed search among the heuristics' top-K algorithms and a sweep for the best achievable rate.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "kernels/gemm.hpp"
#include "matmul_cases.hpp"
#include "xfbench/xfbench.hpp"

namespace xfbench::matmul {
namespace {

namespace k = xfbench::kernels;

struct Settings {
  bool search = true;
  int topk = 16;
  bool variants = false;
  std::size_t workspace = std::size_t(64) << 20;
  int cooldown_ms = 150;
};

// Products of at least this many FLOPs (about 15 us on an H100) pause before timing, and their
// search's final runs each finalist this long (GemmTuneOptions::final_ms) in the steady protocol.
constexpr double kCooldownFlops = 1e10;
constexpr double kSteadyFinalMs = 100;

k::Precision precision_of(Dtype d) {
  if (d == Dtype::fp64) XF_THROW(InvalidArgument, "matmul has no fp64 cases");
  return k::precision_of(d);
}

k::GemmDesc desc_of(const CaseSpec& c) {
  k::GemmDesc d;
  d.precision = precision_of(c.dtype);
  d.trans_a = c.layout.trans_a;
  d.trans_b = c.layout.trans_b;
  d.m = c.shape.m, d.n = c.shape.n, d.k = c.shape.k, d.batch = c.shape.batch;
  d.fp8_fast_accum = c.fp8_fast_accum;
  return d;
}

// Cases that cannot run on this GPU say why before anything is allocated.
void check_supported(const CaseSpec& c, const k::GemmDesc& d, const Settings& s) {
  const DeviceInfo& dev = device_info();
  auto cc = std::to_string(dev.cc_major) + "." + std::to_string(dev.cc_minor);
  if (c.dtype == Dtype::fp8 && dev.cc() < 89)
    XF_THROW(Unsupported,
             "fp8 (e4m3) tensor cores need compute capability 8.9+; this GPU is " + cc);
  if ((c.dtype == Dtype::bf16 || c.dtype == Dtype::tf32) && dev.cc() < 80)
    XF_THROW(Unsupported, std::string(to_string(c.dtype)) + " needs compute capability 8.0+");
  if (c.dtype == Dtype::fp8 && !(d.trans_b && !d.trans_a)) {
    XF_THROW(Unsupported,
             "cuBLASLt runs fp8 only with both operands K-major: layout NT here "
             "(cuBLASLt's column-major TN)");
  }
  const double in = double(k::elem_size(k::input_type(d.precision)));
  const double need = double(k::a_elements(d)) * in + double(k::b_elements(d)) * in +
                      double(k::c_elements(d)) * double(k::elem_size(d.out_type())) +
                      double(s.workspace);
  std::size_t free = 0, total = 0;
  XF_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  if (need > 0.95 * double(free)) {
    XF_THROW(Unsupported, "needs " + std::to_string(need / 1e9).substr(0, 5) + " GB; " +
                              std::to_string(double(free) / 1e9).substr(0, 5) + " GB free");
  }
}

// 256 random positions plus the four corners of the first and last batch item.
std::vector<k::GemmSample> sample_positions(const Shape& s) {
  std::mt19937_64 rng(0x5eed + std::uint64_t(s.m * 31 + s.n * 7 + s.k));
  std::vector<k::GemmSample> out;
  for (std::int64_t b : {std::int64_t(0), s.batch - 1}) {
    out.push_back({b, 0, 0});
    out.push_back({b, 0, s.n - 1});
    out.push_back({b, s.m - 1, 0});
    out.push_back({b, s.m - 1, s.n - 1});
  }
  for (int i = 0; i < 256; ++i) {
    out.push_back({std::int64_t(rng() % std::uint64_t(s.batch)),
                   std::int64_t(rng() % std::uint64_t(s.m)),
                   std::int64_t(rng() % std::uint64_t(s.n))});
  }
  return out;
}

// Runs the chosen algorithm once on a poisoned C and compares sampled elements with a float64
// product of the same inputs; every element of C must be finite (written, no overflow).
void validate(cudaStream_t stream, const k::Gemm& plan, const k::GemmOperands& ops,
              const CaseSpec& c) {
  const k::GemmDesc& d = plan.desc();
  const std::size_t c_count = k::c_elements(d);
  poison(ops.c, c_count * k::elem_size(d.out_type()), stream);
  plan.run(stream, ops);

  const std::vector<k::GemmSample> samples = sample_positions(c.shape);
  const int n = int(samples.size());
  DeviceBuffer<k::GemmSample> d_samples(samples.size());
  DeviceBuffer<double> d_ref(samples.size()), d_got(samples.size());
  DeviceBuffer<unsigned long long> d_bad(1);
  XF_CUDA_CHECK(cudaMemcpyAsync(d_samples.data(), samples.data(), d_samples.bytes(),
                                cudaMemcpyHostToDevice, stream));
  XF_CUDA_CHECK(cudaMemsetAsync(d_bad.data(), 0, d_bad.bytes(), stream));
  k::gemm_reference_at(stream, d, ops.a, ops.b, d_samples.data(), n, d_ref.data());
  k::gemm_gather_at(stream, d, ops.c, d_samples.data(), n, d_got.data());
  k::count_nonfinite(stream, d.out_type(), ops.c, c_count, d_bad.data());

  std::vector<double> ref(samples.size()), got(samples.size());
  unsigned long long bad = 0;
  XF_CUDA_CHECK(
      cudaMemcpyAsync(ref.data(), d_ref.data(), d_ref.bytes(), cudaMemcpyDeviceToHost, stream));
  XF_CUDA_CHECK(
      cudaMemcpyAsync(got.data(), d_got.data(), d_got.bytes(), cudaMemcpyDeviceToHost, stream));
  XF_CUDA_CHECK(cudaMemcpyAsync(&bad, d_bad.data(), sizeof bad, cudaMemcpyDeviceToHost, stream));
  XF_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (bad > 0) {
    XF_THROW(ValidationError, std::to_string(bad) + " of " + std::to_string(c_count) +
                                  " elements of C are NaN/Inf (unwritten or overflowed)");
  }
  require_close("C at " + std::to_string(n) + " sampled positions vs float64 reference",
                compare(got, ref), tolerance_for(c.dtype, c.shape.k));
}

void run_case(benchmark::State& state, const CaseSpec& c, const Settings& s) {
  const k::GemmDesc d = desc_of(c);
  check_supported(c, d, s);
  const k::ElemType in = k::input_type(d.precision);
  Stream stream;
  DeviceMemory a(k::a_elements(d) * k::elem_size(in));
  DeviceMemory b(k::b_elements(d) * k::elem_size(in));
  DeviceMemory out(k::c_elements(d) * k::elem_size(d.out_type()));
  fill_uniform(a.get(), k::a_elements(d), fill_type(in), 1, -1.0, 1.0, stream);
  fill_uniform(b.get(), k::b_elements(d), fill_type(in), 2, -1.0, 1.0, stream);
  poison(out.get(), out.bytes(), stream);

  k::GemmOptions options;
  options.workspace_bytes = s.workspace;
  options.heuristics = s.search ? s.topk : 1;
  options.variants = s.search && s.variants;
  k::Gemm& plan = k::gemm_plan(d, options);  // heuristics: outside the timed region
  k::GemmOperands ops;
  ops.a = a.get(), ops.b = b.get(), ops.c = out.get();
  // Timed search, also untimed here. Large products are measured from an idle GPU (below), so a
  // challenger to the incumbent must also win from idle.
  k::GemmTuneOptions tuning;
  if (k::gemm_flops(d) >= kCooldownFlops) {
    tuning.idle_ms = s.cooldown_ms;
    // The steady protocol measures a large product under the power cap: its final too.
    if (timing_mode() == TimingMode::steady) tuning.final_ms = kSteadyFinalMs;
  }
  if (s.search && !plan.tuned()) plan.tune(stream, ops, tuning);
  mark_phase("search");
  if (should_validate()) validate(stream, plan, ops, c);
  mark_phase("validate");
  add_label(state, plan.algo_info().label());
  // Start timing from an idle GPU, so that a case neither inherits the previous case's heat nor
  // its own search's: under the power limit, clocks depend on the recent past. The PyTorch peer
  // (reports/peer_torch.py --mode hot) pauses the same way.
  if (s.cooldown_ms > 0 && k::gemm_flops(d) >= kCooldownFlops) {
    stream.sync();
    std::this_thread::sleep_for(std::chrono::milliseconds(s.cooldown_ms));
  }
  Timing t = time_gpu(state, stream, [&](cudaStream_t st) { plan.run(st, ops); });
  set_counters(state, t, {k::gemm_flops(d), k::gemm_bytes(d), c.dtype});
}

std::vector<Dtype> dtypes_flag(const char* name, const char* help) {
  std::vector<Dtype> out;
  for (const std::string& s : flag_list(name, help)) {
    Dtype d = parse_dtype(s);
    if (d == Dtype::fp64) XF_THROW(InvalidArgument, "matmul has no fp64 cases");
    out.push_back(d);
  }
  return out;
}

void register_cases() {
  Selection sel;
  sel.dtypes = dtypes_flag("matmul_dtypes",
                           "dtypes of the Matmul cases: fp32,tf32,fp16,bf16,fp8 (default: all for "
                           "the squares, fp16,bf16 for layouts and model GEMMs)");
  for (const std::string& l :
       flag_list("matmul_layouts",
                 "layouts NN,NT,TN (row-major C = op(A)·op(B); default: NN "
                 "squares, NT/TN at 4096 and 8192, model GEMMs as in the model)"))
    sel.layouts.push_back(parse_layout(l));
  std::string shapes = flag_string("matmul_shapes", "",
                                   "MxNxK or BxMxNxK list replacing the default squares and model "
                                   "GEMMs, e.g. 8192x8192x4096,1024x512x512x64");
  if (!shapes.empty()) sel.shapes = parse_shapes(shapes);
  sel.sweep_dtypes = dtypes_flag("matmul_sweep",
                                 "dtypes to sweep over an M×N×K grid "
                                 "(Matmul/sweep/...), e.g. bf16,fp8");
  auto sizes = [](const char* name, const char* fallback, const char* help) {
    std::vector<std::string> items = flag_list(name, help);
    if (items.empty()) items = split(fallback, ',');
    return parse_sizes(items, name);
  };
  sel.sweep_m =
      sizes("matmul_sweep_m", "4096,6144,8192", "sweep M values (default 4096,6144,8192)");
  sel.sweep_n =
      sizes("matmul_sweep_n", "8192,12288,16384", "sweep N values (default 8192,12288,16384)");
  sel.sweep_k = sizes("matmul_sweep_k", "2048,2816,4096,8192",
                      "sweep K values (default 2048,2816,4096,8192)");
  sel.sweep_layout = parse_layout(flag_string("matmul_sweep_layout", "NT", "layout of the sweep"));
  sel.fp8_fast_accum = flag_bool("matmul_fp8_fast_accum", false,
                                 "fp8: accumulate without periodic fp32 promotion (faster, less "
                                 "exact; the names say accum:fast)");

  Settings s;
  s.search = flag_bool("matmul_search", true,
                       "time the top-K cuBLASLt heuristic algorithms and use the fastest "
                       "(false: the first heuristic, like a plain cuBLAS call)");
  long topk = flag_int("matmul_topk", 16, "candidates timed by the algorithm search (1..64)");
  if (topk < 1 || topk > 64) XF_THROW(InvalidArgument, "--xfbench_matmul_topk must be 1..64");
  s.topk = int(topk);
  s.variants = flag_bool("matmul_variants", false,
                         "the search also times every custom option and CTA swizzling of each "
                         "heuristic's kernel that cuBLASLt accepts (slower search)");
  long ws = flag_int("matmul_workspace_mib", 64, "cuBLASLt workspace in MiB (0..4096)");
  if (ws < 0 || ws > 4096)
    XF_THROW(InvalidArgument, "--xfbench_matmul_workspace_mib must be 0..4096");
  s.workspace = std::size_t(ws) << 20;
  // An idle pause makes sense only for a short burst (hot mode): the steady protocol measures the
  // sustained state, and the PyTorch peer idles as little as xfbench does.
  long cool = flag_int("matmul_cooldown_ms", timing_mode() == TimingMode::steady ? 0 : 150,
                       "idle pause before timing each case of >= 1e10 FLOPs (0..10000 ms; "
                       "default 150 in hot mode, 0 in steady mode)");
  if (cool < 0 || cool > 10000)
    XF_THROW(InvalidArgument, "--xfbench_matmul_cooldown_ms must be 0..10000");
  s.cooldown_ms = int(cool);

  // The default suite: the seeds' headline square, 8192, in every dtype (fp8 in its NT layout),
  // and bf16 at 16384 (the highest rate); other squares, layouts, model GEMMs and sweeps when a
  // filter selects them. Shapes given by flag are core.
  auto suite = [&](const CaseSpec& c) {
    const Shape& x = c.shape;
    const bool square = x.m == x.n && x.n == x.k && x.batch == 1 && c.model.empty() && !c.sweep;
    const bool headline_layout = c.layout.name() == (c.dtype == Dtype::fp8 ? "NT" : "NN");
    const bool core =
        !sel.shapes.empty() ||
        (square && headline_layout && (x.n == 8192 || (x.n == 16384 && c.dtype == Dtype::bf16)));
    return core ? Suite::core : Suite::extended;
  };
  for (const CaseSpec& c : select_cases(sel)) {
    add_case(
        c.name(), [c, s](benchmark::State& state) { run_case(state, c, s); }, Needs::gpu, suite(c));
  }
}

}  // namespace
}  // namespace xfbench::matmul

XFBENCH_PLUGIN("matmul", "1.0.0", "cuBLASLt GEMM TFLOPS with algorithm search",
               xfbench::matmul::register_cases)
