// cuBLASLt plans' internals shared by gemm.cu (descriptors, heuristics, launches) and
// gemm_search.cu (the timed search and the process-wide plan cache): the per-device context and
// the plan's Impl. Not for other code: gemm.hpp is the interface.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/gemm.hpp"
#include "xfbench/error.hpp"

namespace xfbench::kernels::detail {

class Workspace {
 public:
  explicit Workspace(std::size_t bytes) : bytes_(bytes) {
    if (bytes_) XF_CUDA_CHECK(cudaMalloc(&ptr_, bytes_));
  }
  ~Workspace() {
    if (ptr_) cudaFree(ptr_);
  }
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;
  void* get() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }

 private:
  std::size_t bytes_ = 0;
  void* ptr_ = nullptr;
};

struct DeviceContext {
  cublasLtHandle_t handle = nullptr;  // never destroyed: lives until the process ends
  cublasHandle_t blas = nullptr;      // cuBLAS's own GEMM, one more search candidate
  std::shared_ptr<Workspace> shared;  // the largest shared workspace asked for so far
};

std::mutex& context_mutex();
// Leaked on purpose: destroying handles after the CUDA runtime unloads at exit is unsafe.
std::map<int, DeviceContext>& contexts();

int current_device();

}  // namespace xfbench::kernels::detail

namespace xfbench::kernels {

struct Gemm::Impl {
  GemmDesc d;
  GemmOptions opt;
  cublasLtHandle_t handle = nullptr;
  std::shared_ptr<detail::Workspace> ws;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t lay_a = nullptr;  // cuBLASLt's A: our B
  cublasLtMatrixLayout_t lay_b = nullptr;  // cuBLASLt's B: our A
  cublasLtMatrixLayout_t lay_c = nullptr;
  std::vector<cublasLtMatmulHeuristicResult_t> heur;
  // cuBLAS's cublasGemmEx (what torch.matmul calls) as the candidate after the heuristics, for
  // plain products: its own kernel choice sometimes beats every cuBLASLt heuristic.
  cublasHandle_t blas = nullptr;
  bool blas_candidate() const { return blas != nullptr; }
  int sel = 0;
  bool tuned = false;
  std::string plan_key;  // gemm_plan's key (empty for a plan built directly): the file's record
  // fp8 only: unit scales for A and B (256 bytes apart) and, at kDummyC, a stand-in for C:
  // cuBLASLt's fp8 kernels reject C aliasing D, and with beta = 0 C is never read.
  static constexpr std::size_t kScratchBytes = 1024, kDummyC = 512;
  float* scratch = nullptr;
  const float* unit_scale(int which) const { return scratch + 64 * which; }

  ~Impl() {
    if (lay_a) cublasLtMatrixLayoutDestroy(lay_a);
    if (lay_b) cublasLtMatrixLayoutDestroy(lay_b);
    if (lay_c) cublasLtMatrixLayoutDestroy(lay_c);
    if (op) cublasLtMatmulDescDestroy(op);
    if (scratch) cudaFree(scratch);
  }

  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  // cuBLAS reads alpha and beta in the scale type: float, or double for fp64.
  cudaDataType_t scale_type() const {
    return d.precision == Precision::fp64 ? CUDA_R_64F : CUDA_R_32F;
  }
  struct Scalars {
    float f[2];
    double d[2];
    bool wide;
    const void* alpha() const { return wide ? static_cast<const void*>(d) : f; }
    const void* beta() const { return wide ? static_cast<const void*>(d + 1) : f + 1; }
  };
  Scalars scalars(const GemmOperands& o) const {
    return {{o.alpha, o.beta}, {o.alpha, o.beta}, d.precision == Precision::fp64};
  }

  void build();
  void ask_heuristics(cublasLtMatmulPreference_t pref);
  void add_plain_algorithms(cublasLtMatmulPreference_t pref);
  void add_variants();
  void add_checked(const cublasLtMatmulAlgo_t& algo);
  void enqueue(cudaStream_t stream, const GemmOperands& ops, int index) const;
  void enqueue_blas(cudaStream_t stream, const GemmOperands& ops) const;
};

}  // namespace xfbench::kernels
