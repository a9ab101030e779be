// Hopper warpgroup MMA (wgmma) wrappers for m64n64k16 and m64n128k16 with fp32 accumulators,
// used by the sm_90a flash-attention kernels. Operand tiles in shared memory are 64-element
// (128-byte) rows, 16-byte chunks XOR-swizzled by row (detail/flash.cuh's `swizzled`) in
// 1024-byte-aligned 8-row atoms: wgmma's 128-byte swizzle. K-major operands step 32 bytes per k16;
// MN-major ones 2048. Include only from files compiled for sm_90a (kernels/CMakeLists.txt).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

namespace xfbench::kernels::detail {

// A shared-memory matrix descriptor, 128-byte swizzle; sbo: bytes between 8-row groups.
__device__ __forceinline__ std::uint64_t wgmma_desc(const void* tile, std::uint32_t lbo,
                                                    std::uint32_t sbo) {
  const auto addr = static_cast<std::uint32_t>(__cvta_generic_to_shared(tile));
  return std::uint64_t((addr & 0x3FFFF) >> 4) | std::uint64_t(lbo >> 4) << 16 |
         std::uint64_t(sbo >> 4) << 32 | std::uint64_t(1) << 62;
}
// Descriptor step of one k16 slice: K-major tiles move 32 bytes, MN-major ones 16 rows.
constexpr std::uint64_t kKMajorStep = 32 >> 4, kMnMajorStep = 2048 >> 4;

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define XF_WGMMA_D                                                                              \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, " \
  "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define XF_WGMMA_D_OPERANDS(d)                                                                  \
  "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]),     \
      "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), \
      "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), \
      "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), \
      "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]), \
      "+f"(d[7][2]), "+f"(d[7][3])

// d (+)= A·B, A and B in shared memory; TransA: A is M-major (else K-major), TransB: B is N-major.
template <class T, bool TransA, bool TransB>
__device__ __forceinline__ void wgmma_ss(float (&d)[8][4], std::uint64_t a, std::uint64_t b,
                                         int accumulate) {
  constexpr int ta = TransA, tb = TransB;
  if constexpr (std::is_same<T, __half>::value)
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 " XF_WGMMA_D
        ", %32, %33, p, 1, 1, %35, %36;\n}\n"
        : XF_WGMMA_D_OPERANDS(d)
        : "l"(a), "l"(b), "r"(accumulate), "n"(ta), "n"(tb));
  else
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 " XF_WGMMA_D
        ", %32, %33, p, 1, 1, %35, %36;\n}\n"
        : XF_WGMMA_D_OPERANDS(d)
        : "l"(a), "l"(b), "r"(accumulate), "n"(ta), "n"(tb));
}

// d += A·B, A from registers (the mma.sync A-fragment layout per warp), B N-major in shared.
template <class T>
__device__ __forceinline__ void wgmma_rs(float (&d)[8][4], const std::uint32_t (&a)[4],
                                         std::uint64_t b) {
  if constexpr (std::is_same<T, __half>::value)
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 " XF_WGMMA_D
        ", {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
        : XF_WGMMA_D_OPERANDS(d)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
  else
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 " XF_WGMMA_D
        ", {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
        : XF_WGMMA_D_OPERANDS(d)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}
#undef XF_WGMMA_D
#undef XF_WGMMA_D_OPERANDS

#define XF_WGMMA_D128                                                                           \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, " \
  "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, "  \
  "%38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, "  \
  "%56, %57, %58, %59, %60, %61, %62, %63}"
#define XF_WGMMA_D128_OPERANDS(d)                                                                 \
  "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]),       \
      "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]),   \
      "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]),   \
      "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]),   \
      "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]),   \
      "+f"(d[7][2]), "+f"(d[7][3]), "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]),   \
      "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]), "+f"(d[10][0]), "+f"(d[10][1]), \
      "+f"(d[10][2]), "+f"(d[10][3]), "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]),             \
      "+f"(d[11][3]), "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]),             \
      "+f"(d[13][0]), "+f"(d[13][1]), "+f"(d[13][2]), "+f"(d[13][3]), "+f"(d[14][0]),             \
      "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]), "+f"(d[15][0]), "+f"(d[15][1]),             \
      "+f"(d[15][2]), "+f"(d[15][3])

// The n128 forms: d is [16][4] (n8 tiles 0 ... 15 in order, two n64 accumulators side by side).
// An N-major B of 128 columns is two 64-column panels, LBO bytes apart in its descriptor.
template <class T, bool TransA, bool TransB>
__device__ __forceinline__ void wgmma_ss(float (&d)[16][4], std::uint64_t a, std::uint64_t b,
                                         int accumulate) {
  constexpr int ta = TransA, tb = TransB;
  if constexpr (std::is_same<T, __half>::value)
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 " XF_WGMMA_D128
        ", %64, %65, p, 1, 1, %67, %68;\n}\n"
        : XF_WGMMA_D128_OPERANDS(d)
        : "l"(a), "l"(b), "r"(accumulate), "n"(ta), "n"(tb));
  else
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 " XF_WGMMA_D128
        ", %64, %65, p, 1, 1, %67, %68;\n}\n"
        : XF_WGMMA_D128_OPERANDS(d)
        : "l"(a), "l"(b), "r"(accumulate), "n"(ta), "n"(tb));
}

template <class T>
__device__ __forceinline__ void wgmma_rs(float (&d)[16][4], const std::uint32_t (&a)[4],
                                         std::uint64_t b) {
  if constexpr (std::is_same<T, __half>::value)
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 " XF_WGMMA_D128
        ", {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
        : XF_WGMMA_D128_OPERANDS(d)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
  else
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 " XF_WGMMA_D128
        ", {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
        : XF_WGMMA_D128_OPERANDS(d)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}
#undef XF_WGMMA_D128
#undef XF_WGMMA_D128_OPERANDS

__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
// Waits until at most `Pending` of this warpgroup's committed groups are still running (groups
// finish in commit order).
template <int Pending = 0>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(Pending) : "memory");
}
// Pins registers an asynchronous wgmma reads or writes at this point of the program (after its
// wgmma_wait): the compiler sees them read and written here, so it neither moves a use of its
// accumulators above the wait nor gives a register operand's registers to other values before it
// (the asm of wgmma_wait names no registers).
__device__ __forceinline__ void fence_registers(float& x) { asm volatile("" : "+f"(x)::"memory"); }
__device__ __forceinline__ void fence_registers(std::uint32_t& x) {
  asm volatile("" : "+r"(x)::"memory");
}
template <class R, int N>
__device__ __forceinline__ void fence_registers(R (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) fence_registers(r[i]);
}
__device__ __forceinline__ void wgmma_commit_and_wait() {
  wgmma_commit();
  wgmma_wait();
}
// Makes this thread's writes to shared memory (st.shared, cp.async) visible to wgmma.
__device__ __forceinline__ void fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
#endif

}  // namespace xfbench::kernels::detail
