// cuBLASLt plans in row-major terms (see gemm.hpp): names and sizes, the per-device context, the
// descriptors, heuristics and launches. The timed search and the plan cache are in gemm_search.cu,
// the float64 reference kernels for checking results in gemm_check.cu.
#include "kernels/gemm.hpp"

#include "kernels/detail/gemm_impl.hpp"

#include <cublas_v2.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <limits>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>

#include "xfbench/check_libs.hpp"
#include "xfbench/error.hpp"

namespace xfbench::kernels {

// ---- Names ------------------------------------------------------------------------------------

const char* to_string(Epilogue e) {
  switch (e) {
    case Epilogue::none:
      return "none";
    case Epilogue::bias:
      return "bias";
    case Epilogue::gelu_bias:
      return "gelu_bias";
    case Epilogue::gelu_aux_bias:
      return "gelu_aux_bias";
    case Epilogue::dgelu_bgrad:
      return "dgelu_bgrad";
    case Epilogue::bgrad_a:
      return "bgrad_a";
  }
  return "?";
}

std::string GemmDesc::layout() const {
  return std::string(trans_a ? "T" : "N") + (trans_b ? "T" : "N");
}

std::string GemmDesc::describe() const {
  std::string s = std::string(to_string(precision)) + " " + layout() + " m=" + std::to_string(m) +
                  " n=" + std::to_string(n) + " k=" + std::to_string(k);
  if (batch != 1) s += " batch=" + std::to_string(batch);
  if (epilogue != Epilogue::none) s += std::string(" epilogue=") + to_string(epilogue);
  if (a_e5m2 || b_e5m2) s += std::string(" a=") + to_string(a_type()) + " b=" + to_string(b_type());
  return s + " out=" + to_string(out_type());
}

double gemm_flops(const GemmDesc& d) {
  return 2.0 * double(d.m) * double(d.n) * double(d.k) * double(d.batch);
}

double gemm_bytes(const GemmDesc& d) {
  const double a = double(elem_size(d.a_type())), b = double(elem_size(d.b_type()));
  const double out = double(elem_size(d.out_type()));
  return double(d.batch) *
         (double(d.m) * d.k * a + double(d.k) * d.n * b + double(d.m) * d.n * out);
}

namespace {
// Elements spanned by `batch` items of `rows` rows of pitch `ld` whose last row holds `cols`.
std::size_t span(std::int64_t batch, std::int64_t stride, std::int64_t rows, std::int64_t ld,
                 std::int64_t cols) {
  if (batch <= 0 || rows <= 0 || cols <= 0) return 0;
  return std::size_t((batch - 1) * stride + (rows - 1) * ld + cols);
}
}  // namespace

std::size_t a_elements(const GemmDesc& d) {
  return d.trans_a ? span(d.batch, d.a_stride(), d.k, d.a_ld(), d.m)
                   : span(d.batch, d.a_stride(), d.m, d.a_ld(), d.k);
}
std::size_t b_elements(const GemmDesc& d) {
  return d.trans_b ? span(d.batch, d.b_stride(), d.n, d.b_ld(), d.k)
                   : span(d.batch, d.b_stride(), d.k, d.b_ld(), d.n);
}
std::size_t c_elements(const GemmDesc& d) {
  return span(d.batch, d.c_stride(), d.m, d.c_ld(), d.n);
}

// ---- Algorithm names for labels ---------------------------------------------------------------

namespace {

// cublasLtMatmulTile_t 0..35 (the larger ids are narrow tiles, shown by number).
const char* const kTiles[] = {
    "undef",  "8x8",    "8x16",    "16x8",    "8x32",    "16x16",   "32x8",    "8x64",   "16x32",
    "32x16",  "64x8",   "32x32",   "32x64",   "64x32",   "32x128",  "64x64",   "128x32", "64x128",
    "128x64", "64x256", "128x128", "256x64",  "64x512",  "128x256", "256x128", "512x64", "64x96",
    "96x64",  "96x128", "128x160", "160x128", "192x128", "128x192", "128x96",  "32x256", "256x32"};
// cublasLtMatmulStages_t 0..38 (29 and 30 unused).
const char* const kStages[] = {
    "undef",  "16x1",    "16x2",    "16x3",    "16x4",     "16x5",     "16x6",    "32x1",
    "32x2",   "32x3",    "32x4",    "32x5",    "32x6",     "64x1",     "64x2",    "64x3",
    "64x4",   "64x5",    "64x6",    "128x1",   "128x2",    "128x3",    "128x4",   "128x5",
    "128x6",  "32x10",   "8x4",     "16x10",   "8x5",      "?",        "?",       "8x3",
    "8xAUTO", "16xAUTO", "32xAUTO", "64xAUTO", "128xAUTO", "256xAUTO", "768xAUTO"};
// cublasLtClusterShape_t 0..16 (larger ids shown by number).
const char* const kClusters[] = {"auto",  "?",     "1x1x1", "2x1x1",  "4x1x1", "1x2x1",
                                 "2x2x1", "4x2x1", "1x4x1", "2x4x1",  "4x4x1", "8x1x1",
                                 "1x8x1", "8x2x1", "2x8x1", "16x1x1", "1x16x1"};

template <std::size_t N>
std::string name_of(const char* const (&table)[N], int id) {
  if (id >= 0 && std::size_t(id) < N) return table[id];
  return "#" + std::to_string(id);
}

}  // namespace

std::string GemmAlgoInfo::label() const {
  char buf[320];
  if (blas) {
    std::snprintf(buf, sizeof buf, "algo=cublasGemmEx compute=%s heur=%d/%d", compute.c_str(),
                  index, candidates);
    return buf;
  }
  std::snprintf(buf, sizeof buf,
                "algo=%d tile=%s stages=%s cluster=%s splitK=%d red=%d swizzle=%d custom=%d "
                "ws=%.0fMiB compute=%s heur=%d/%d",
                algo_id, name_of(kTiles, tile).c_str(), name_of(kStages, stages).c_str(),
                name_of(kClusters, cluster).c_str(), splitk, reduction, swizzle, custom,
                double(workspace) / double(1 << 20), compute.c_str(), index, candidates);
  return buf;
}

// ---- Device context: one handle per device, shared workspaces ---------------------------------

namespace detail {
std::mutex& context_mutex() {
  static std::mutex m;
  return m;
}
// Leaked on purpose: destroying handles after the CUDA runtime unloads at exit is unsafe.
std::map<int, DeviceContext>& contexts() {
  static auto* c = new std::map<int, DeviceContext>();
  return *c;
}
int current_device() {
  int dev = 0;
  XF_CUDA_CHECK(cudaGetDevice(&dev));
  return dev;
}
}  // namespace detail
using detail::context_mutex;
using detail::contexts;
using detail::current_device;
using detail::DeviceContext;
using detail::Workspace;

namespace {

cublasLtHandle_t handle_for(int device) {
  std::lock_guard<std::mutex> lock(context_mutex());
  DeviceContext& c = contexts()[device];
  if (!c.handle) XF_CUBLAS_CHECK(cublasLtCreate(&c.handle));
  return c.handle;
}

cublasHandle_t blas_handle_for(int device) {
  std::lock_guard<std::mutex> lock(context_mutex());
  DeviceContext& c = contexts()[device];
  if (!c.blas) XF_CUBLAS_CHECK(cublasCreate(&c.blas));
  return c.blas;
}

std::shared_ptr<Workspace> workspace_for(int device, std::size_t bytes, bool priv) {
  if (priv) return std::make_shared<Workspace>(bytes);
  std::lock_guard<std::mutex> lock(context_mutex());
  DeviceContext& c = contexts()[device];
  if (!c.shared || c.shared->bytes() < bytes) c.shared = std::make_shared<Workspace>(bytes);
  return c.shared;
}

cudaDataType_t cuda_type(ElemType t) {
  switch (t) {
    case ElemType::f32:
      return CUDA_R_32F;
    case ElemType::f16:
      return CUDA_R_16F;
    case ElemType::bf16:
      return CUDA_R_16BF;
    case ElemType::e4m3:
      return CUDA_R_8F_E4M3;
    case ElemType::e5m2:
      return CUDA_R_8F_E5M2;
    case ElemType::f64:
      return CUDA_R_64F;
  }
  return CUDA_R_32F;
}

cublasLtEpilogue_t lt_epilogue(Epilogue e) {
  switch (e) {
    case Epilogue::none:
      return CUBLASLT_EPILOGUE_DEFAULT;
    case Epilogue::bias:
      return CUBLASLT_EPILOGUE_BIAS;
    case Epilogue::gelu_bias:
      return CUBLASLT_EPILOGUE_GELU_BIAS;
    case Epilogue::gelu_aux_bias:
      return CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
    case Epilogue::dgelu_bgrad:
      return CUBLASLT_EPILOGUE_DGELU_BGRAD;
    case Epilogue::bgrad_a:
      return CUBLASLT_EPILOGUE_BGRADB;  // our A is cuBLASLt's B after the row-major swap
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

bool reads_bias(Epilogue e) {
  return e == Epilogue::bias || e == Epilogue::gelu_bias || e == Epilogue::gelu_aux_bias;
}
bool writes_bias_grad(Epilogue e) { return e == Epilogue::dgelu_bgrad || e == Epilogue::bgrad_a; }
bool uses_aux(Epilogue e) { return e == Epilogue::gelu_aux_bias || e == Epilogue::dgelu_bgrad; }

template <class T>
void set_desc(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr, const T& v) {
  XF_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(d, attr, &v, sizeof v));
}

cublasLtMatrixLayout_t make_layout(ElemType t, std::int64_t rows, std::int64_t cols,
                                   std::int64_t ld, std::int64_t batch, std::int64_t stride) {
  cublasLtMatrixLayout_t l = nullptr;
  XF_CUBLAS_CHECK(
      cublasLtMatrixLayoutCreate(&l, cuda_type(t), std::uint64_t(rows), std::uint64_t(cols), ld));
  if (batch > 1) {
    int count = int(batch);
    XF_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                                     sizeof count));
    XF_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                     &stride, sizeof stride));
  }
  return l;
}

void validate_desc(const GemmDesc& d) {
  auto bad = [&](const std::string& why) {
    XF_THROW(InvalidArgument, "GEMM " + d.describe() + ": " + why);
  };
  if (d.m <= 0 || d.n <= 0 || d.k <= 0) bad("m, n and k must be positive");
  if (d.batch < 1 || d.batch > std::numeric_limits<int>::max()) bad("batch must be >= 1");
  if (d.a_ld() < (d.trans_a ? d.m : d.k)) bad("lda smaller than a row of A");
  if (d.b_ld() < (d.trans_b ? d.k : d.n)) bad("ldb smaller than a row of B");
  if (d.c_ld() < d.n) bad("ldc smaller than a row of C");
  if (d.alignment < 1 || (d.alignment & (d.alignment - 1))) bad("alignment must be a power of 2");
  const ElemType out = d.out_type();
  const bool ok_out = out == default_output_type(d.precision) ||
                      (out == ElemType::f32 && d.precision != Precision::fp32 &&
                       d.precision != Precision::tf32 && d.precision != Precision::fp64) ||
                      (out == ElemType::f16 && d.precision == Precision::fp8);
  if (!ok_out) bad("this output type is not offered for this precision");
  if ((d.a_e5m2 || d.b_e5m2) && d.precision != Precision::fp8) bad("e5m2 operands are fp8's");
  if (d.a_e5m2 && d.b_e5m2) bad("cuBLASLt multiplies e5m2 only with e4m3");
}

}  // namespace

// ---- The plan ----------------------------------------------------------------------------------

void Gemm::Impl::build() {
  validate_desc(d);
  int device = current_device();
  handle = handle_for(device);
  ws = workspace_for(device, opt.workspace_bytes, opt.private_workspace);

  const ElemType out = d.out_type();
  if (d.precision == Precision::fp32) compute = CUBLAS_COMPUTE_32F_PEDANTIC;
  if (d.precision == Precision::tf32) compute = CUBLAS_COMPUTE_32F_FAST_TF32;
  if (d.precision == Precision::fp64) compute = CUBLAS_COMPUTE_64F;
  XF_CUBLAS_CHECK(cublasLtMatmulDescCreate(&op, compute, scale_type()));

  // Row-major C = op(A)·op(B) is column-major Cᵀ = op(B)ᵀ·op(A)ᵀ: cuBLASLt's A is our B.
  cublasOperation_t ta = d.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t tb = d.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  set_desc(op, CUBLASLT_MATMUL_DESC_TRANSA, ta);
  set_desc(op, CUBLASLT_MATMUL_DESC_TRANSB, tb);
  set_desc(op, CUBLASLT_MATMUL_DESC_EPILOGUE, lt_epilogue(d.epilogue));
  if (uses_aux(d.epilogue)) {
    set_desc(op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, std::int64_t(d.c_ld()));
    if (d.batch > 1)
      set_desc(op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE, std::int64_t(d.c_stride()));
  }
  if (d.precision == Precision::fp8) {
    XF_CUDA_CHECK(cudaMalloc(&scratch, kScratchBytes));
    std::vector<float> host(kScratchBytes / sizeof(float), 0.0f);
    host[0] = host[64] = 1.0f;
    XF_CUDA_CHECK(cudaMemcpy(scratch, host.data(), kScratchBytes, cudaMemcpyHostToDevice));
    set_desc(op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, static_cast<const void*>(unit_scale(0)));
    set_desc(op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, static_cast<const void*>(unit_scale(1)));
    set_desc(op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, std::int8_t(d.fp8_fast_accum ? 1 : 0));
  }

  const ElemType in_a = d.a_type(), in_b = d.b_type();
  lay_a = d.trans_b ? make_layout(in_b, d.k, d.n, d.b_ld(), d.batch, d.b_stride())
                    : make_layout(in_b, d.n, d.k, d.b_ld(), d.batch, d.b_stride());
  lay_b = d.trans_a ? make_layout(in_a, d.m, d.k, d.a_ld(), d.batch, d.a_stride())
                    : make_layout(in_a, d.k, d.m, d.a_ld(), d.batch, d.a_stride());
  lay_c = make_layout(out, d.n, d.m, d.c_ld(), d.batch, d.c_stride());

  cublasLtMatmulPreference_t pref = nullptr;
  XF_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  std::uint64_t ws_bytes = ws->bytes();
  XF_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof ws_bytes));
  std::uint32_t align = std::uint32_t(std::min(d.alignment, 256));
  for (auto attr :
       {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES}) {
    XF_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, attr, &align, sizeof align));
  }
  ask_heuristics(pref);
  if (heur.empty() && compute == CUBLAS_COMPUTE_32F_PEDANTIC) {
    // Plain fp32 compute also runs on FMA units (TF32 needs the _FAST_TF32 compute type); only
    // the promise of no reduced-precision split-K reduction is lost.
    compute = CUBLAS_COMPUTE_32F;
    XF_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, &compute,
                                                   sizeof compute));
    ask_heuristics(pref);
  }
  if (d.epilogue != Epilogue::none && !heur.empty()) add_plain_algorithms(pref);
  if (opt.variants && !heur.empty()) add_variants();
  cublasLtMatmulPreferenceDestroy(pref);
  if (d.epilogue == Epilogue::none && d.precision != Precision::fp8 && !heur.empty()) {
    blas = blas_handle_for(device);
  }
  if (heur.empty()) {
    XF_THROW(Unsupported, "cuBLASLt has no algorithm for " + d.describe() +
                              (d.precision == Precision::fp8
                                   ? " (fp8 needs layout NT, dimensions multiple of 16, sm_89+)"
                                   : ""));
  }
}

void Gemm::Impl::ask_heuristics(cublasLtMatmulPreference_t pref) {
  heur.assign(std::size_t(std::max(1, opt.heuristics)), cublasLtMatmulHeuristicResult_t{});
  int returned = 0;
  cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(handle, op, lay_a, lay_b, lay_c, lay_c, pref,
                                                     int(heur.size()), heur.data(), &returned);
  if (st != CUBLAS_STATUS_SUCCESS && st != CUBLAS_STATUS_NOT_SUPPORTED) XF_CUBLAS_CHECK(st);
  heur.resize(std::size_t(st == CUBLAS_STATUS_SUCCESS ? returned : 0));
  heur.erase(std::remove_if(heur.begin(), heur.end(),
                            [](const cublasLtMatmulHeuristicResult_t& r) {
                              return r.state != CUBLAS_STATUS_SUCCESS;
                            }),
             heur.end());
}

// The heuristics rank fewer kernels for a product with an epilogue, and not always the plain
// product's best: at T=32768 the QKV projection with cuBLASLt's bias epilogue took 17% longer than
// without it. The plain product's top algorithms that pass cublasLtMatmulAlgoCheck with this
// epilogue join the candidates (after the epilogue's own), for the search to time.
void Gemm::Impl::add_plain_algorithms(cublasLtMatmulPreference_t pref) {
  cublasLtMatmulDesc_t plain = nullptr;
  XF_CUBLAS_CHECK(cublasLtMatmulDescCreate(&plain, compute, CUDA_R_32F));
  set_desc(plain, CUBLASLT_MATMUL_DESC_TRANSA, d.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N);
  set_desc(plain, CUBLASLT_MATMUL_DESC_TRANSB, d.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N);
  std::vector<cublasLtMatmulHeuristicResult_t> found(std::size_t(std::max(1, opt.heuristics)));
  int returned = 0;
  const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(
      handle, plain, lay_a, lay_b, lay_c, lay_c, pref, int(found.size()), found.data(), &returned);
  cublasLtMatmulDescDestroy(plain);
  if (st != CUBLAS_STATUS_SUCCESS) return;  // the epilogue's own candidates stay
  for (int i = 0; i < returned; ++i)
    if (found[std::size_t(i)].state == CUBLAS_STATUS_SUCCESS)
      add_checked(found[std::size_t(i)].algo);
}

// Appends `algo` as a candidate when it is new and cuBLASLt accepts it for this product and
// workspace.
void Gemm::Impl::add_checked(const cublasLtMatmulAlgo_t& algo) {
  for (const cublasLtMatmulHeuristicResult_t& h : heur)
    if (std::memcmp(&h.algo, &algo, sizeof algo) == 0) return;
  cublasLtMatmulHeuristicResult_t checked{};
  if (cublasLtMatmulAlgoCheck(handle, op, lay_a, lay_b, lay_c, lay_c, &algo, &checked) !=
          CUBLAS_STATUS_SUCCESS ||
      checked.workspaceSize > ws->bytes())
    return;
  checked.algo = algo;
  checked.state = CUBLAS_STATUS_SUCCESS;
  heur.push_back(checked);
}

// Each ranked kernel under its other custom options and CTA swizzling (both are free choices of
// a configuration that the heuristics fix), up to kMaxCandidates in all.
void Gemm::Impl::add_variants() {
  constexpr std::size_t kMaxCandidates = 128;
  const std::vector<cublasLtMatmulHeuristicResult_t> ranked = heur;
  for (const cublasLtMatmulHeuristicResult_t& h : ranked) {
    std::int32_t max_custom = 0;
    std::uint32_t swizzle = 0;
    std::size_t written = 0;
    cublasLtMatmulAlgoCapGetAttribute(&h.algo, CUBLASLT_ALGO_CAP_CUSTOM_OPTION_MAX, &max_custom,
                                      sizeof max_custom, &written);
    cublasLtMatmulAlgoCapGetAttribute(&h.algo, CUBLASLT_ALGO_CAP_CTA_SWIZZLING_SUPPORT, &swizzle,
                                      sizeof swizzle, &written);
    for (std::uint32_t custom = 0; custom <= std::uint32_t(std::max(0, max_custom)); ++custom) {
      for (std::uint32_t swz = 0; swz <= std::min(swizzle, 1u); ++swz) {
        if (heur.size() >= kMaxCandidates) return;
        cublasLtMatmulAlgo_t algo = h.algo;
        if (cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &custom,
                                                 sizeof custom) != CUBLAS_STATUS_SUCCESS ||
            cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &swz,
                                                 sizeof swz) != CUBLAS_STATUS_SUCCESS)
          continue;
        add_checked(algo);
      }
    }
  }
}

void Gemm::Impl::enqueue(cudaStream_t stream, const GemmOperands& o, int index) const {
  auto misaligned = [&](const void* p, std::uintptr_t a) {
    return reinterpret_cast<std::uintptr_t>(p) % a != 0;
  };
  const std::uintptr_t align = std::uintptr_t(std::min(d.alignment, 256));
  if (!o.a || !o.b || !o.c) XF_THROW(InvalidArgument, "GEMM run: A, B and C are required");
  if (misaligned(o.a, align) || misaligned(o.b, align) || misaligned(o.c, align)) {
    XF_THROW(InvalidArgument,
             "GEMM run: A, B or C not aligned to the plan's " + std::to_string(align) + " bytes");
  }
  if (reads_bias(d.epilogue)) {
    if (!o.bias || misaligned(o.bias, 16))
      XF_THROW(InvalidArgument, "GEMM run: epilogue needs a 16-byte aligned bias");
    set_desc(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, o.bias);
  }
  if (writes_bias_grad(d.epilogue)) {
    if (!o.bias_grad || misaligned(o.bias_grad, 16))
      XF_THROW(InvalidArgument, "GEMM run: epilogue needs a 16-byte aligned bias_grad");
    set_desc(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, static_cast<const void*>(o.bias_grad));
  }
  if (uses_aux(d.epilogue)) {
    if (!o.aux || misaligned(o.aux, 16))
      XF_THROW(InvalidArgument, "GEMM run: epilogue needs a 16-byte aligned aux matrix");
    set_desc(op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, static_cast<const void*>(o.aux));
  }
  if (d.precision == Precision::fp8) {
    set_desc(op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,
             static_cast<const void*>(o.a_scale ? o.a_scale : unit_scale(0)));
    set_desc(op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
             static_cast<const void*>(o.b_scale ? o.b_scale : unit_scale(1)));
  }
  const void* c_in = o.c_in ? o.c_in : o.c;
  if (d.precision == Precision::fp8 && c_in == o.c) {
    if (o.beta != 0.0f)
      XF_THROW(InvalidArgument, "GEMM run: fp8 with beta != 0 needs c_in apart from c");
    c_in = reinterpret_cast<const char*>(scratch) + kDummyC;
  }
  if (index == int(heur.size())) return enqueue_blas(stream, o);
  const cublasLtMatmulHeuristicResult_t& h = heur[std::size_t(index)];
  const Scalars s = scalars(o);
  XF_CUBLAS_CHECK(cublasLtMatmul(handle, op, s.alpha(), o.b, lay_a, o.a, lay_b, s.beta(), c_in,
                                 lay_c, o.c, lay_c, &h.algo, ws->get(), h.workspaceSize, stream));
}

// Row-major C = op(A)·op(B) is column-major Cᵀ = op(B)ᵀ·op(A)ᵀ: B first, as for cuBLASLt.
void Gemm::Impl::enqueue_blas(cudaStream_t stream, const GemmOperands& o) const {
  XF_CUBLAS_CHECK(cublasSetStream(blas, stream));
  XF_CUBLAS_CHECK(cublasSetWorkspace(blas, ws->get(), ws->bytes()));  // capture-safe, no pool
  const cublasOperation_t op_b = d.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_a = d.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cudaDataType_t in = cuda_type(input_type(d.precision)), out = cuda_type(d.out_type());
  const void* c_in = o.c_in ? o.c_in : o.c;
  if (c_in != o.c) {
    XF_CUDA_CHECK(cudaMemcpy2DAsync(o.c, std::size_t(d.c_ld()) * elem_size(d.out_type()), c_in,
                                    std::size_t(d.c_ld()) * elem_size(d.out_type()),
                                    std::size_t(d.n) * elem_size(d.out_type()),
                                    std::size_t(d.m * d.batch), cudaMemcpyDeviceToDevice, stream));
  }
  const Scalars s = scalars(o);
  if (d.batch == 1) {
    XF_CUBLAS_CHECK(cublasGemmEx(blas, op_b, op_a, int(d.n), int(d.m), int(d.k), s.alpha(), o.b, in,
                                 int(d.b_ld()), o.a, in, int(d.a_ld()), s.beta(), o.c, out,
                                 int(d.c_ld()), compute, CUBLAS_GEMM_DEFAULT));
  } else {
    XF_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
        blas, op_b, op_a, int(d.n), int(d.m), int(d.k), s.alpha(), o.b, in, int(d.b_ld()),
        d.b_stride(), o.a, in, int(d.a_ld()), d.a_stride(), s.beta(), o.c, out, int(d.c_ld()),
        d.c_stride(), int(d.batch), compute, CUBLAS_GEMM_DEFAULT));
  }
}

Gemm::Gemm(const GemmDesc& desc, const GemmOptions& options) : impl_(std::make_unique<Impl>()) {
  impl_->d = desc;
  impl_->opt = options;
  impl_->build();
}

Gemm::~Gemm() = default;

const GemmDesc& Gemm::desc() const { return impl_->d; }
int Gemm::candidates() const { return int(impl_->heur.size()) + (impl_->blas_candidate() ? 1 : 0); }
int Gemm::selected() const { return impl_->sel; }
bool Gemm::tuned() const { return impl_->tuned; }

void Gemm::select(int index) {
  if (index < 0 || index >= candidates()) {
    XF_THROW(InvalidArgument, "GEMM algorithm index " + std::to_string(index) + " out of 0.." +
                                  std::to_string(candidates() - 1));
  }
  impl_->sel = index;
}

GemmAlgoInfo Gemm::algo_info(int index) const {
  GemmAlgoInfo info;
  info.index = index;
  info.candidates = candidates();
  if (impl_->blas_candidate() && index == int(impl_->heur.size())) {
    info.blas = true;
    info.workspace = impl_->ws->bytes();
  }
  const cublasLtMatmulHeuristicResult_t& h =
      impl_->heur.at(std::size_t(info.blas ? 0 : index));  // cublasGemmEx: attributes unknown
  if (!info.blas) info.workspace = h.workspaceSize;
  switch (impl_->compute) {
    case CUBLAS_COMPUTE_32F_PEDANTIC:
      info.compute = "32F_PEDANTIC";
      break;
    case CUBLAS_COMPUTE_32F_FAST_TF32:
      info.compute = "32F_FAST_TF32";
      break;
    case CUBLAS_COMPUTE_64F:
      info.compute = "64F";
      break;
    default:
      info.compute = "32F";
  }
  if (info.blas) return info;
  // Attributes are 16 or 32 bits wide: ask the size first, read into a zeroed 64-bit word.
  auto get = [&](cublasLtMatmulAlgoConfigAttributes_t attr, int& value) {
    std::size_t need = 0;
    if (cublasLtMatmulAlgoConfigGetAttribute(&h.algo, attr, nullptr, 0, &need) !=
            CUBLAS_STATUS_SUCCESS ||
        need == 0 || need > sizeof(std::uint64_t)) {
      return;
    }
    std::uint64_t v = 0;
    std::size_t written = 0;
    if (cublasLtMatmulAlgoConfigGetAttribute(&h.algo, attr, &v, need, &written) ==
        CUBLAS_STATUS_SUCCESS) {
      value = int(v);
    }
  };
  get(CUBLASLT_ALGO_CONFIG_ID, info.algo_id);
  get(CUBLASLT_ALGO_CONFIG_TILE_ID, info.tile);
  get(CUBLASLT_ALGO_CONFIG_STAGES_ID, info.stages);
  get(CUBLASLT_ALGO_CONFIG_SPLITK_NUM, info.splitk);
  get(CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, info.reduction);
  get(CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, info.swizzle);
  get(CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, info.custom);
  get(CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, info.cluster);
  return info;
}

void Gemm::run(cudaStream_t stream, const GemmOperands& ops) const {
  impl_->enqueue(stream, ops, impl_->sel);
}

}  // namespace xfbench::kernels
