// Shared-memory barriers (mbarrier) for a block whose threads wait on one another's copies and
// reads without meeting at __syncthreads. Include only from files compiled for sm_90a.
#pragma once

#include <cstdint>

namespace xfbench::kernels::detail {

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
__device__ __forceinline__ unsigned mbar_addr(const std::uint64_t* bar) {
  return static_cast<unsigned>(__cvta_generic_to_shared(bar));
}
// A barrier whose phases complete after `count` arrivals each.
__device__ __forceinline__ void mbar_init(std::uint64_t* bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(mbar_addr(bar)), "r"(count));
}
__device__ __forceinline__ void mbar_arrive(std::uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(mbar_addr(bar)) : "memory");
}
// This thread's arrival, made once its cp.async copies issued so far have landed.
__device__ __forceinline__ void mbar_arrive_on_copies(std::uint64_t* bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(mbar_addr(bar))
               : "memory");
}
// Waits until the phase of the given parity (the k-th phase has parity k & 1) has completed.
__device__ __forceinline__ void mbar_wait(std::uint64_t* bar, int parity) {
  asm volatile(
      "{\n.reg .pred done;\nWAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT;\n}\n" ::"r"(mbar_addr(bar)),
      "r"(parity)
      : "memory");
}
#endif

}  // namespace xfbench::kernels::detail
