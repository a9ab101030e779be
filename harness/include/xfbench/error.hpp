// Exceptions the SDK, kernels and plugins throw. Every one carries file:line and the library's own
// message; the SDK's case wrapper turns them into one SkipWithError line per case.
#pragma once

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

// Exceptions cross the plugin boundary: their type information must be shared, not hidden.
#define XFBENCH_VISIBLE __attribute__((visibility("default")))

namespace xfbench {

// Base of every xfbench error: "<file>:<line>: <what>".
class XFBENCH_VISIBLE Error : public std::runtime_error {
 public:
  Error(const std::string& what, const char* file, int line)
      : std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + what),
        message_(what) {}
  const std::string& message() const { return message_; }  // without file:line

 private:
  std::string message_;
};

// A CUDA runtime error; `code` tells the case wrapper whether the context is now unusable.
class XFBENCH_VISIBLE CudaError : public Error {
 public:
  CudaError(cudaError_t code, const std::string& what, const char* file, int line)
      : Error(what, file, line), code_(code) {}
  cudaError_t code() const { return code_; }

 private:
  cudaError_t code_;
};

// Bad user input (flags, shapes, dtypes): rejected before any GPU work.
class XFBENCH_VISIBLE InvalidArgument : public Error {
  using Error::Error;
};

// The case cannot run here (dtype the GPU lacks, size that does not fit): skipped, not failed.
class XFBENCH_VISIBLE Unsupported : public Error {
  using Error::Error;
};

// The machine lacks what the case needs (a second GPU, ATS): the case is left out of the run's
// output and counted in one summary line per reason, so a one-GPU machine shows no error lines
// for two-GPU cases. The message is that reason without the case's details ("needs 2 GPUs, this
// machine has 1"); cases stay listed by --benchmark_list_tests.
class XFBENCH_VISIBLE LeftOut : public Unsupported {
  using Unsupported::Unsupported;
};

// A result that disagrees with its reference: the case reports "validation failed: ...".
class XFBENCH_VISIBLE ValidationError : public Error {
  using Error::Error;
};

// Errors of other libraries (cuBLAS, cuDNN, NCCL, NVML).
class XFBENCH_VISIBLE LibraryError : public Error {
  using Error::Error;
};

namespace detail {
inline void check_cuda(cudaError_t err, const char* expr, const char* file, int line) {
  if (err != cudaSuccess) {
    throw CudaError(
        err,
        std::string(expr) + ": " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")",
        file, line);
  }
}
}  // namespace detail

}  // namespace xfbench

#define XF_CUDA_CHECK(expr) ::xfbench::detail::check_cuda((expr), #expr, __FILE__, __LINE__)
// After a kernel launch: catches bad launch configurations at once.
#define XF_CUDA_CHECK_LAUNCH() XF_CUDA_CHECK(cudaGetLastError())
#define XF_THROW(Type, what) throw ::xfbench::Type((what), __FILE__, __LINE__)
#define XF_REQUIRE(cond, what)                                                 \
  do {                                                                         \
    if (!(cond)) throw ::xfbench::InvalidArgument((what), __FILE__, __LINE__); \
  } while (0)
