// Status checks for cuBLAS(Lt), cuDNN and NCCL. Include only in files that already use the library.
#pragma once

#include <string>

#include "xfbench/error.hpp"

#if __has_include(<cublasLt.h>)
#include <cublasLt.h>
namespace xfbench::detail {
inline void check_cublas(cublasStatus_t st, const char* expr, const char* file, int line) {
  if (st != CUBLAS_STATUS_SUCCESS) {
    // cublasLt's names: plugins that use cuBLASLt need not link libcublas as well.
    throw LibraryError(std::string(expr) + ": cuBLAS " + cublasLtGetStatusName(st) + " (" +
                           cublasLtGetStatusString(st) + ")",
                       file, line);
  }
}
}  // namespace xfbench::detail
#define XF_CUBLAS_CHECK(expr) ::xfbench::detail::check_cublas((expr), #expr, __FILE__, __LINE__)
#endif

#if defined(XFBENCH_USE_CUDNN)
#include <cudnn.h>
namespace xfbench::detail {
inline void check_cudnn(cudnnStatus_t st, const char* expr, const char* file, int line) {
  if (st != CUDNN_STATUS_SUCCESS) {
    throw LibraryError(std::string(expr) + ": cuDNN " + cudnnGetErrorString(st), file, line);
  }
}
}  // namespace xfbench::detail
#define XF_CUDNN_CHECK(expr) ::xfbench::detail::check_cudnn((expr), #expr, __FILE__, __LINE__)
#endif

#if defined(XFBENCH_USE_NCCL)
#include <nccl.h>
namespace xfbench::detail {
inline void check_nccl(ncclResult_t r, const char* expr, const char* file, int line) {
  if (r != ncclSuccess) {
    throw LibraryError(std::string(expr) + ": NCCL " + ncclGetErrorString(r), file, line);
  }
}
}  // namespace xfbench::detail
#define XF_NCCL_CHECK(expr) ::xfbench::detail::check_nccl((expr), #expr, __FILE__, __LINE__)
#endif
