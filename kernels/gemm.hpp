// Matrix products through cuBLASLt, in row-major terms, for the matmul plugin and the layers.
//
//   C[m,n] = epilogue(alpha · op(A) · op(B) + beta · C)        (per batch item)
//
// Row-major storage throughout: A is stored [m,k] (or [k,m] with trans_a), B is stored [k,n] (or
// [n,k] with trans_b), C is [m,n]. Layout names follow the same convention: "NT" is trans_a=false,
// trans_b=true, i.e. y = x·Wᵀ of nn.Linear with W stored [out,in]. Internally the product is
// handed to cuBLASLt (column-major) as Cᵀ = op(B)ᵀ·op(A)ᵀ, so no data moves.
//
// A Gemm is built once per (shape, layout, precision, epilogue): descriptors and heuristics at
// construction, an optional timed search among the top-K heuristic algorithms (tune), then cheap
// run() calls that are safe inside CUDA graph capture. gemm_plan() caches plans per device.
// Plans on a device share one workspace: run them on one stream at a time, or give a plan its
// own workspace (GemmOptions::private_workspace).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/precision.hpp"
#include "xfbench/dtype.hpp"

namespace xfbench::kernels {

// Fused epilogues, in row-major terms (vectors index C's columns unless said otherwise).
enum class Epilogue {
  none,           // C = alpha·op(A)·op(B) + beta·C
  bias,           // ... + bias[n] on every row
  gelu_bias,      // C = gelu(... + bias[n])          (GELU: cuBLASLt's tanh approximation)
  gelu_aux_bias,  // as gelu_bias, and aux[m,n] = the GELU input (kept for the backward pass)
  dgelu_bgrad,    // C = (alpha·op(A)·op(B)) * gelu'(aux[m,n]); bias_grad[n] = column sums of C
  bgrad_a,        // plain product, and bias_grad[m] = Σ_k op(A)[i,k] (the weight-gradient GEMM
                  // dW = dYᵀ·X in layout TN gets db = Σ_tokens dY; cuBLASLt's BGRADB)
};
const char* to_string(Epilogue e);

struct GemmDesc {
  Precision precision = Precision::bf16;
  // C's storage; default_output_type(precision) when unset. fp16/bf16 may also write f32 (fp32
  // gradient accumulation); fp8 may write bf16, f16 or f32.
  std::optional<ElemType> out;
  bool trans_a = false;  // A stored [k,m] instead of [m,k]
  bool trans_b = false;  // B stored [n,k] instead of [k,n]
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t lda = 0, ldb = 0, ldc = 0;  // row pitch in elements; 0: packed
  std::int64_t batch = 1;                  // strided batch (attention: batch = b·heads)
  std::int64_t stride_a = 0, stride_b = 0, stride_c = 0;  // elements between items; 0: packed
  Epilogue epilogue = Epilogue::none;
  int alignment = 256;          // bytes every A/B/C pointer passed to run() is aligned to
  bool fp8_fast_accum = false;  // fp8 only: skip the periodic fp32 promotion (faster, less exact)
  // fp8 only: A (or B) stored in e5m2, the gradients' format, instead of e4m3. cuBLASLt takes
  // e4m3 with e5m2 in either order, never both in e5m2.
  bool a_e5m2 = false, b_e5m2 = false;

  ElemType out_type() const { return out ? *out : default_output_type(precision); }
  ElemType a_type() const { return a_e5m2 ? ElemType::e5m2 : input_type(precision); }
  ElemType b_type() const { return b_e5m2 ? ElemType::e5m2 : input_type(precision); }
  std::int64_t a_ld() const { return lda ? lda : (trans_a ? m : k); }
  std::int64_t b_ld() const { return ldb ? ldb : (trans_b ? k : n); }
  std::int64_t c_ld() const { return ldc ? ldc : n; }
  std::int64_t a_stride() const { return stride_a ? stride_a : m * k; }
  std::int64_t b_stride() const { return stride_b ? stride_b : k * n; }
  std::int64_t c_stride() const { return stride_c ? stride_c : m * n; }
  std::string layout() const;  // "NN", "NT", "TN" or "TT"
  std::string describe() const;
};

// 2·m·n·k·batch: the FLOP count of a product (the seeds' formula), in one place.
double gemm_flops(const GemmDesc& d);
// Bytes of A and B read once and C written once (read too when beta != 0 is not counted).
double gemm_bytes(const GemmDesc& d);
// Element counts a caller allocates for A, B and C (covering every batch item).
std::size_t a_elements(const GemmDesc& d);
std::size_t b_elements(const GemmDesc& d);
std::size_t c_elements(const GemmDesc& d);

// What one run() reads and writes. Pointers are device pointers.
struct GemmOperands {
  const void* a = nullptr;
  const void* b = nullptr;
  void* c = nullptr;           // output D
  const void* c_in = nullptr;  // C read when beta != 0; nullptr: c itself (in place). fp8
                               // cannot run in place, so with beta != 0 it needs c_in.
  const void* bias = nullptr;  // bias, gelu_bias, gelu_aux_bias: [n], C's storage type
  void* bias_grad = nullptr;   // dgelu_bgrad: [n]; bgrad_a: [m]; C's storage type
  void* aux = nullptr;         // gelu_aux_bias: written [m,n]; dgelu_bgrad: read [m,n]
  float alpha = 1.0f, beta = 0.0f;
  const float* a_scale = nullptr;  // fp8: device scalars multiplying A and B (default 1)
  const float* b_scale = nullptr;
};

struct GemmOptions {
  std::size_t workspace_bytes = std::size_t(64) << 20;  // Hopper's fastest kernels want a big one
  int heuristics = 16;                                  // candidates asked of cuBLASLt (top-K)
  // Also every custom option and CTA swizzling of each heuristic's kernel that cuBLASLt accepts
  // (configurations its heuristics do not rank; several times more candidates to time).
  bool variants = false;
  bool private_workspace = false;
};

// The algorithm a plan runs, in words and numbers (for labels and reports).
struct GemmAlgoInfo {
  int index = 0, candidates = 0;  // position in the heuristic list, list length
  int algo_id = 0, tile = 0, stages = 0, splitk = 0, reduction = 0, swizzle = 0, custom = 0;
  int cluster = 0;
  std::size_t workspace = 0;
  bool blas = false;          // cuBLAS's cublasGemmEx rather than a cuBLASLt algorithm
  std::string compute;        // cuBLAS compute type, e.g. "32F_PEDANTIC"
  std::string label() const;  // "algo=66 tile=128x256 stages=128xAUTO splitK=1 ... heur=2/8"
};

struct GemmTuneResult {
  std::vector<double> seconds;  // per candidate, best of three ~2 ms rounds (inf: failed to run)
  int best = 0;  // the finalist chosen by choose_by_rounds over seven alternating ~10 ms rounds:
                 // the incumbent (cublasGemmEx, else cuBLASLt's first choice) unless clearly beaten
};

// The search's final choice among finalists timed in alternating rounds (rounds[i][r]: seconds
// per launch of finalist i in round r; round r of every finalist ran back to back, so it is a
// paired sample). Keeps `incumbent` unless a challenger is faster in at least `min_wins` rounds
// and its median is at least `margin` (relative, e.g. 0.01) below the incumbent's median; the
// challengers then meet the one holding the place in list order, by the same rule. Near-ties
// between kernels are run-to-run noise: picking their lucky winner would make the search worse
// than no search half the time, and a suite would not pick what the same case picks alone.
int choose_by_rounds(const std::vector<std::vector<double>>& rounds, int incumbent, int min_wins,
                     double margin);

// What choose_faster keeps in the XFBENCH_GEMM_PLANS file beside the GEMM searches, so that a
// later run with the file (a case alone after the suite) makes the same choice without timing:
// `key` names exactly what was chosen between (shapes, dtype, options), `product` says it as a
// person reads it, `labels` names each way ("unfused", "fused").
struct ChoiceRecord {
  std::string key, product;
  std::vector<std::string> labels;
};

// Which of several ways of doing the same work on `stream` to keep: each enqueues it once. Times
// them as the steady search's final times its finalists (five alternating rounds of ~50 ms, each
// after half as long of the same way untimed, so each is timed at the clock the power limiter
// settles on for it: ~10 ms runs under the cap ranked the FFN's GELU products against their
// steady-state order) and keeps the first, the incumbent, unless another is clearly faster
// (choose_by_rounds: four wins of five and 1% by median). Synchronises; outside timed regions.
// seconds (nullable): each one's median seconds per run; left empty when `record` (nullable) found
// the choice in the XFBENCH_GEMM_PLANS file, which then runs nothing. A timed choice with a
// record is added to the file.
int choose_faster(cudaStream_t stream, const std::vector<std::function<void()>>& ways,
                  std::vector<double>* seconds = nullptr, const ChoiceRecord* record = nullptr);

struct GemmTuneOptions {
  // > 0: a challenger that beats the incumbent in the (back-to-back) final must beat it again in a
  // confirmation timed as a benchmark measures: five alternating ~50 ms runs, each after this many
  // milliseconds idle. Kernels rank differently from an idle GPU at full clock than under
  // sustained load: at n=4096 a 128x128 tile won the final and lost 2-5% in the measurement.
  int idle_ms = 0;
  // > 0: the final times each finalist for about this many milliseconds a round (five rounds,
  // four wins to replace the incumbent), each run after half as long of the same product untimed,
  // so that each is measured at the clock the power limiter settles on for it. Under the cap,
  // ~10 ms runs favour a product drawing more power (the clock still reflects the others'):
  // at n=8192 bf16 one won them and lost 2.8% in the steady measurement. For a case whose number
  // is the product itself (Matmul); ~1.5 s per search at 100.
  double final_ms = 0;
};

class Gemm {
 public:
  // Builds descriptors and asks cuBLASLt's heuristics; throws Unsupported when no algorithm
  // fits (e.g. fp8 in a layout other than NT, or a GPU without fp8), InvalidArgument on a bad
  // description. Uses the current CUDA device.
  explicit Gemm(const GemmDesc& desc, const GemmOptions& options = {});
  ~Gemm();
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;

  const GemmDesc& desc() const;
  int candidates() const;
  int selected() const;
  void select(int index);  // use heuristic candidate `index` (0 = cuBLASLt's first choice)
  bool tuned() const;
  GemmAlgoInfo algo_info(int index) const;
  GemmAlgoInfo algo_info() const { return algo_info(selected()); }

  // Enqueues the product on `stream`: no allocation, no synchronisation (graph-capturable).
  void run(cudaStream_t stream, const GemmOperands& ops) const;

  // Times every candidate with CUDA events on these operands (which it overwrites: C, aux,
  // bias_grad) and selects the incumbent or a clearly faster challenger (GemmTuneResult,
  // choose_by_rounds). Synchronises; call outside timed regions. With XFBENCH_GEMM_LOG=1 in the
  // environment, prints what it chose to stderr, one line a search: "xfbench gemm search:
  // <describe()> -> <label()>" (a case's number depends on its products' kernels, and a case
  // alone may choose other kernels than in a suite).
  GemmTuneResult tune(cudaStream_t stream, const GemmOperands& ops,
                      const GemmTuneOptions& options = {});

 private:
  friend Gemm& gemm_plan(const GemmDesc& desc, const GemmOptions& options);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The process-wide plan for (current device, desc, options), built on first use. Not tuned: a
// caller that wants the search calls tune() once (tuned() says whether it ran) — unless a plan of
// the same key was searched before clear_gemm_plans(), or the XFBENCH_GEMM_PLANS file holds an
// earlier run's search of it (gemm_plans_file.hpp): then it starts with that search's choice.
// With that file named, every search's choice is added to it.
Gemm& gemm_plan(const GemmDesc& desc, const GemmOptions& options = {});
// Frees cached plans and shared workspaces (tests, memory pressure, a case measuring its own
// memory); the searches' choices are kept.
void clear_gemm_plans();

// --- Checking results -------------------------------------------------------------------------

// A position (batch item, row, column) of C.
struct GemmSample {
  std::int64_t batch = 0, row = 0, col = 0;
};

// float64 op(A)·op(B) at `count` device-resident samples, into device `out` (no alpha, beta or
// epilogue; fp8 scales not applied). Reads A and B with the description's layout and strides.
void gemm_reference_at(cudaStream_t stream, const GemmDesc& d, const void* a, const void* b,
                       const GemmSample* samples, int count, double* out);
// C's values at the samples, widened to float64, into device `out`.
void gemm_gather_at(cudaStream_t stream, const GemmDesc& d, const void* c,
                    const GemmSample* samples, int count, double* out);
// Adds the number of NaN/Inf elements among `count` elements of type `t` to device `*counter`.
void count_nonfinite(cudaStream_t stream, ElemType t, const void* data, std::size_t count,
                     unsigned long long* counter);

}  // namespace xfbench::kernels
