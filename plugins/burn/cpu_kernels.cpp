// Compiled with -ffp-contract=off: the unfused kernels and references must round the product and
// the sum apart, as written.
#include "cpu_kernels.hpp"

#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace xfbench::burn {
namespace {

// x·1.5 + 0.25 then ·(2/3) - 1/6 would give x back; the 2^-20 left over moves every value up by
// about that much each step, so each step changes every bit pattern, and a chunk of 65536 steps
// moves x by about 1/16.
constexpr float kMul = 1.5f, kAdd = 0.25f, kMulBack = float(2.0 / 3.0);
constexpr float kAddBack = -(kAdd * kMulBack) + 0x1p-20f;

// In [1, 1.25) with scrambled low mantissa bits (more bits toggle than from round numbers).
float start_value(std::size_t i) {
  std::uint32_t h = std::uint32_t(i) * 2654435761u;
  h ^= h >> 15;
  const std::uint32_t bits = 0x3f800000u | (h & 0x1fffffu);
  float v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

#if defined(__x86_64__)
__attribute__((target("avx512f"))) void chunk_avx512(std::uint64_t steps, float* out) {
  __m512 x[kAccumulators];
  for (int i = 0; i < kAccumulators; ++i)
    x[i] =
        _mm512_set_ps(start_value(16 * i + 15), start_value(16 * i + 14), start_value(16 * i + 13),
                      start_value(16 * i + 12), start_value(16 * i + 11), start_value(16 * i + 10),
                      start_value(16 * i + 9), start_value(16 * i + 8), start_value(16 * i + 7),
                      start_value(16 * i + 6), start_value(16 * i + 5), start_value(16 * i + 4),
                      start_value(16 * i + 3), start_value(16 * i + 2), start_value(16 * i + 1),
                      start_value(16 * i));
  const __m512 m = _mm512_set1_ps(kMul), a = _mm512_set1_ps(kAdd);
  const __m512 mb = _mm512_set1_ps(kMulBack), ab = _mm512_set1_ps(kAddBack);
  for (std::uint64_t s = 0; s < steps; ++s) {
#pragma GCC unroll 16
    for (int i = 0; i < kAccumulators; ++i) x[i] = _mm512_fmadd_ps(x[i], m, a);
#pragma GCC unroll 16
    for (int i = 0; i < kAccumulators; ++i) x[i] = _mm512_fmadd_ps(x[i], mb, ab);
  }
  for (int i = 0; i < kAccumulators; ++i) _mm512_storeu_ps(out + 16 * i, x[i]);
}

__attribute__((target("avx2,fma"))) void chunk_avx2(std::uint64_t steps, float* out) {
  __m256 x[kAccumulators];
  for (int i = 0; i < kAccumulators; ++i)
    x[i] = _mm256_set_ps(start_value(8 * i + 7), start_value(8 * i + 6), start_value(8 * i + 5),
                         start_value(8 * i + 4), start_value(8 * i + 3), start_value(8 * i + 2),
                         start_value(8 * i + 1), start_value(8 * i));
  const __m256 m = _mm256_set1_ps(kMul), a = _mm256_set1_ps(kAdd);
  const __m256 mb = _mm256_set1_ps(kMulBack), ab = _mm256_set1_ps(kAddBack);
  for (std::uint64_t s = 0; s < steps; ++s) {
#pragma GCC unroll 16
    for (int i = 0; i < kAccumulators; ++i) x[i] = _mm256_fmadd_ps(x[i], m, a);
#pragma GCC unroll 16
    for (int i = 0; i < kAccumulators; ++i) x[i] = _mm256_fmadd_ps(x[i], mb, ab);
  }
  for (int i = 0; i < kAccumulators; ++i) _mm256_storeu_ps(out + 8 * i, x[i]);
}

void chunk_sse2(std::uint64_t steps, float* out) {
  __m128 x[kAccumulators];
  for (int i = 0; i < kAccumulators; ++i)
    x[i] = _mm_set_ps(start_value(4 * i + 3), start_value(4 * i + 2), start_value(4 * i + 1),
                      start_value(4 * i));
  const __m128 m = _mm_set1_ps(kMul), a = _mm_set1_ps(kAdd);
  const __m128 mb = _mm_set1_ps(kMulBack), ab = _mm_set1_ps(kAddBack);
  for (std::uint64_t s = 0; s < steps; ++s) {
#pragma GCC unroll 16
    for (int i = 0; i < kAccumulators; ++i) x[i] = _mm_add_ps(_mm_mul_ps(x[i], m), a);
#pragma GCC unroll 16
    for (int i = 0; i < kAccumulators; ++i) x[i] = _mm_add_ps(_mm_mul_ps(x[i], mb), ab);
  }
  for (int i = 0; i < kAccumulators; ++i) _mm_storeu_ps(out + 4 * i, x[i]);
}
#endif

#if defined(__aarch64__)
void chunk_neon(std::uint64_t steps, float* out) {
  float32x4_t x[kAccumulators];
  for (int i = 0; i < kAccumulators; ++i) {
    const float v[4] = {start_value(4 * i), start_value(4 * i + 1), start_value(4 * i + 2),
                        start_value(4 * i + 3)};
    x[i] = vld1q_f32(v);
  }
  const float32x4_t m = vdupq_n_f32(kMul), a = vdupq_n_f32(kAdd);
  const float32x4_t mb = vdupq_n_f32(kMulBack), ab = vdupq_n_f32(kAddBack);
  for (std::uint64_t s = 0; s < steps; ++s) {
#pragma GCC unroll 16
    for (int i = 0; i < kAccumulators; ++i) x[i] = vfmaq_f32(a, x[i], m);
#pragma GCC unroll 16
    for (int i = 0; i < kAccumulators; ++i) x[i] = vfmaq_f32(ab, x[i], mb);
  }
  for (int i = 0; i < kAccumulators; ++i) vst1q_f32(out + 4 * i, x[i]);
}
#endif

// Any architecture: 4 lanes in the compiler's vector extension, multiply then add.
void chunk_generic(std::uint64_t steps, float* out) {
  typedef float v4 __attribute__((vector_size(16)));
  v4 x[kAccumulators];
  for (int i = 0; i < kAccumulators; ++i)
    for (int l = 0; l < 4; ++l) x[i][l] = start_value(std::size_t(4 * i + l));
  for (std::uint64_t s = 0; s < steps; ++s) {
#pragma GCC unroll 16
    for (int i = 0; i < kAccumulators; ++i) x[i] = x[i] * kMul + kAdd;
#pragma GCC unroll 16
    for (int i = 0; i < kAccumulators; ++i) x[i] = x[i] * kMulBack + kAddBack;
  }
  for (int i = 0; i < kAccumulators; ++i)
    for (int l = 0; l < 4; ++l) out[4 * i + l] = x[i][l];
}

bool fused(CpuIsa isa) { return isa != CpuIsa::sse2 && isa != CpuIsa::generic; }

}  // namespace

bool cpu_has(CpuIsa isa) {
  switch (isa) {
#if defined(__x86_64__)
    case CpuIsa::avx512f:
      return __builtin_cpu_supports("avx512f");
    case CpuIsa::avx2_fma:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case CpuIsa::sse2:
      return true;
#elif defined(__aarch64__)
    case CpuIsa::neon:
      return true;
#endif
    case CpuIsa::generic:
      return true;
    default:
      return false;
  }
}

CpuIsa detect_cpu_isa() {
  for (CpuIsa isa : {CpuIsa::avx512f, CpuIsa::avx2_fma, CpuIsa::neon, CpuIsa::sse2})
    if (cpu_has(isa)) return isa;
  return CpuIsa::generic;
}

std::string isa_name(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::avx512f:
      return "avx512f";
    case CpuIsa::avx2_fma:
      return "avx2+fma";
    case CpuIsa::neon:
      return "neon";
    case CpuIsa::sse2:
      return "sse2 (no FMA)";
    case CpuIsa::generic:
      break;
  }
  return "generic (no FMA)";
}

int isa_lanes(CpuIsa isa) { return isa == CpuIsa::avx512f ? 16 : isa == CpuIsa::avx2_fma ? 8 : 4; }

double assumed_flop_per_cycle(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::avx512f: {
#if defined(__x86_64__)
      unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
      const bool amd = __builtin_cpu_is("amd");
      const unsigned family =
          __get_cpuid(1, &eax, &ebx, &ecx, &edx) ? ((eax >> 8) & 0xf) + ((eax >> 20) & 0xff) : 0;
      if (amd && family == 0x19) return 32;  // Zen 4: a 256-bit unit, twice per 512-bit FMA
#endif
      return 64;
    }
    case CpuIsa::avx2_fma:
      return 32;
    case CpuIsa::neon:
      return 16;
    default:
      return 8;
  }
}

std::size_t chunk_values(CpuIsa isa) { return std::size_t(kAccumulators * isa_lanes(isa)); }

double chunk_flops(CpuIsa isa, std::uint64_t steps) {
  return double(steps) * 2 /* FMAs a step */ * 2 /* FLOP each */ * double(chunk_values(isa));
}

void run_chunk(CpuIsa isa, std::uint64_t steps, float* out) {
  switch (isa) {
#if defined(__x86_64__)
    case CpuIsa::avx512f:
      return chunk_avx512(steps, out);
    case CpuIsa::avx2_fma:
      return chunk_avx2(steps, out);
    case CpuIsa::sse2:
      return chunk_sse2(steps, out);
#elif defined(__aarch64__)
    case CpuIsa::neon:
      return chunk_neon(steps, out);
#endif
    default:
      return chunk_generic(steps, out);
  }
}

void reference_chunk(CpuIsa isa, std::uint64_t steps, float* out) {
  const bool fma = fused(isa);
  for (std::size_t i = 0; i < chunk_values(isa); ++i) {
    float x = start_value(i);
    for (std::uint64_t s = 0; s < steps; ++s) {
      if (fma) {
        x = std::fma(x, kMul, kAdd);
        x = std::fma(x, kMulBack, kAddBack);
      } else {
        x = x * kMul + kAdd;
        x = x * kMulBack + kAddBack;
      }
    }
    out[i] = x;
  }
}

namespace {

// Seconds of `loops` x 32 dependent integer adds (one a cycle on every x86-64 and AArch64 core).
// Register operands, not immediates: Intel's Golden Cove cores (Sapphire Rapids) fold chains of
// add-immediate at rename, several per cycle, which measured 7-9 GHz on an H200 host.
#if defined(__x86_64__)
#define XF_ADDS_8                                            \
  "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\t" \
  "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\t"
#elif defined(__aarch64__)
#define XF_ADDS_8                                                            \
  "add %0, %0, %1\n\tadd %0, %0, %1\n\tadd %0, %0, %1\n\tadd %0, %0, %1\n\t" \
  "add %0, %0, %1\n\tadd %0, %0, %1\n\tadd %0, %0, %1\n\tadd %0, %0, %1\n\t"
#endif
#define XF_ADDS_16(x, one) asm volatile(XF_ADDS_8 XF_ADDS_8 : "+r"(x) : "r"(one))

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

#if defined(__x86_64__) || defined(__aarch64__)
double add_chain_seconds(std::uint64_t loops, std::uint64_t one) {
  std::uint64_t x = 0;
  const double t0 = now_seconds();
  for (std::uint64_t i = 0; i < loops; ++i) {
    XF_ADDS_16(x, one);
    XF_ADDS_16(x, one);
  }
  return now_seconds() - t0;
}
#endif

// The same chain beside 24 independent FMAs of the burn's vector width a loop: the chain still
// sets the pace (32 cycles against 12 of FMAs on two units, 24 on one), while the FMA units stay
// busy enough that the core runs at the clock of that vector load (Intel's AVX-512 parts run
// 512-bit FMAs at a lower clock than scalar code).
#if defined(__x86_64__)
// One body for both widths (a template would not inline the target-specific intrinsics).
#define XF_CHAIN_BESIDE(V, FMA, SET1)                                                            \
  V x[kAccumulators];                                                                            \
  for (int k = 0; k < kAccumulators; ++k) x[k] = SET1(start_value(std::size_t(k)));              \
  const V m = SET1(kMul), a = SET1(kAdd), mb = SET1(kMulBack), ab = SET1(kAddBack);              \
  std::uint64_t r = 0;                                                                           \
  const double t0 = now_seconds();                                                               \
  for (std::uint64_t i = 0; i < loops; ++i) {                                                    \
    _Pragma("GCC unroll 16") for (int k = 0; k < kAccumulators; ++k) x[k] = FMA(x[k], m, a);     \
    XF_ADDS_16(r, one);                                                                          \
    _Pragma("GCC unroll 16") for (int k = 0; k < kAccumulators; ++k) x[k] = FMA(x[k], mb, ab);   \
    XF_ADDS_16(r, one);                                                                          \
  }                                                                                              \
  const double s = now_seconds() - t0;                                                           \
  float keep[sizeof(V) / sizeof(float)];                                                         \
  volatile float sink = 0;                                                                       \
  for (int k = 0; k < kAccumulators; ++k) std::memcpy(keep, &x[k], sizeof keep), sink = keep[0]; \
  (void)sink;                                                                                    \
  return s;

__attribute__((target("avx512f"))) double beside_avx512(std::uint64_t loops, std::uint64_t one) {
  XF_CHAIN_BESIDE(__m512, _mm512_fmadd_ps, _mm512_set1_ps)
}
__attribute__((target("avx2,fma"))) double beside_avx2(std::uint64_t loops, std::uint64_t one) {
  XF_CHAIN_BESIDE(__m256, _mm256_fmadd_ps, _mm256_set1_ps)
}
#endif

}  // namespace

double probe_clock_mhz(CpuIsa load) {
#if defined(__x86_64__) || defined(__aarch64__)
  // The fastest of 8 attempts of ~0.1 ms: an interrupt, or a hypervisor running another guest
  // on this core, slows some; one undisturbed is the clock.
  constexpr std::uint64_t kLoops = 1 << 13;  // 32 dependent adds each: ~262k cycles
  double best = std::numeric_limits<double>::infinity();
  std::uint64_t one = 1;
  asm volatile("" : "+r"(one));  // a value the compiler and the renamer cannot know
  for (int attempt = 0; attempt < 8; ++attempt) {
#if defined(__x86_64__)
    const double s = load == CpuIsa::avx512f && cpu_has(load)    ? beside_avx512(kLoops, one)
                     : load == CpuIsa::avx2_fma && cpu_has(load) ? beside_avx2(kLoops, one)
                                                                 : add_chain_seconds(kLoops, one);
#else
    (void)load;
    const double s = add_chain_seconds(kLoops, one);
#endif
    best = std::min(best, s);
  }
  return 32.0 * double(kLoops) / best / 1e6;
#else
  (void)load;
  return std::numeric_limits<double>::quiet_NaN();
#endif
}

}  // namespace xfbench::burn
