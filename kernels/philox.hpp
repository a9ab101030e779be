// Counter-based dropout masks (Philox4x32-10, Salmon et al., SC'11), the same on host and device.
//
// The mask of a tensor is a pure function of (seed, offset, element index): element i is kept when
// the 16-bit lane (i % 8) of Philox(counter = {i / 8, offset}, key = seed) is below
// round((1 - p) * 65536). Kernels therefore never store a mask: a backward pass regenerates exactly
// the forward's mask from the same Dropout value, whatever its launch configuration, and the CPU
// references in kernels/reference/ compute the identical mask. Each dropout site of a step must use
// its own `offset` (or seed) so the masks are independent.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define XF_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define XF_HOST_DEVICE inline
#endif

namespace xfbench::kernels {

// A dropout site: zero each element with probability p, scale the kept ones by 1 / (1 - p).
struct Dropout {
  float p = 0.f;  // 0: off (inference); must be in [0, 1)
  std::uint64_t seed = 0;
  std::uint64_t offset = 0;  // Philox stream: distinct per dropout site and training step
  bool active() const { return p > 0.f; }
};

namespace detail {

XF_HOST_DEVICE std::uint32_t mulhilo(std::uint32_t a, std::uint32_t b, std::uint32_t* hi) {
#if defined(__CUDA_ARCH__)
  *hi = __umulhi(a, b);
  return a * b;
#else
  std::uint64_t p = static_cast<std::uint64_t>(a) * b;
  *hi = static_cast<std::uint32_t>(p >> 32);
  return static_cast<std::uint32_t>(p);
#endif
}

struct Philox4 {
  std::uint32_t x, y, z, w;
};

// Philox4x32 with 10 rounds.
XF_HOST_DEVICE Philox4 philox4x32_10(Philox4 c, std::uint32_t k0, std::uint32_t k1) {
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int r = 0; r < 10; ++r) {
    std::uint32_t hi0, hi1;
    std::uint32_t lo0 = mulhilo(0xD2511F53u, c.x, &hi0);
    std::uint32_t lo1 = mulhilo(0xCD9E8D57u, c.z, &hi1);
    c = {hi1 ^ c.y ^ k0, lo1, hi0 ^ c.w ^ k1, lo0};
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return c;
}

}  // namespace detail

// A Dropout prepared for kernels: integer threshold and scale computed once on the host.
struct DropoutMask {
  std::uint32_t threshold = 65536;  // keep when the 16-bit random is below this
  float scale = 1.f;                // 1 / (1 - p)
  std::uint64_t seed = 0, offset = 0;

  DropoutMask() = default;
  explicit DropoutMask(const Dropout& d)
      : threshold(static_cast<std::uint32_t>((1.0 - static_cast<double>(d.p)) * 65536.0 + 0.5)),
        scale(d.p > 0.f ? static_cast<float>(1.0 / (1.0 - static_cast<double>(d.p))) : 1.f),
        seed(d.seed),
        offset(d.offset) {}
  XF_HOST_DEVICE bool active() const { return threshold < 65536u; }

  // The 128 random bits of elements 8 * group ... + 7: element 8 * group + j is kept when the
  // 16-bit half j % 2 (low first) of word j / 2 is below threshold.
  XF_HOST_DEVICE detail::Philox4 random(std::uint64_t group) const {
    return detail::philox4x32_10(
        {static_cast<std::uint32_t>(group), static_cast<std::uint32_t>(group >> 32),
         static_cast<std::uint32_t>(offset), static_cast<std::uint32_t>(offset >> 32)},
        static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32));
  }

  // Bit j of the result: element 8 * group + j is kept.
  XF_HOST_DEVICE unsigned keep8(std::uint64_t group) const {
    const detail::Philox4 r = random(group);
    std::uint32_t words[4] = {r.x, r.y, r.z, r.w};
    unsigned bits = 0;
    for (int j = 0; j < 8; ++j) {
      std::uint32_t u16 = (words[j >> 1] >> ((j & 1) * 16)) & 0xFFFFu;
      bits |= (u16 < threshold ? 1u : 0u) << j;
    }
    return bits;
  }
  XF_HOST_DEVICE bool keep(std::uint64_t index) const {
    return (keep8(index >> 3) >> (index & 7)) & 1u;
  }
};

}  // namespace xfbench::kernels
