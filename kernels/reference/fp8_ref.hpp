// CPU reference of the FP8 casts (fp8.hpp), written from the formats' definitions (OCP 8-bit
// floating point, as NVIDIA's __nv_fp8_e4m3 and __nv_fp8_e5m2 store them) in float64:
//   E4M3  S.EEEE.MMM, bias 7, subnormals down to 2^-9, largest finite 448 (S.1111.110), no
//         infinities, NaN S.1111.111.
//   E5M2  S.EEEEE.MM, bias 15, subnormals down to 2^-16, largest finite 57344 (S.11110.11),
//         ±inf S.11111.00, NaN S.11111.{01,10,11} (IEEE-like).
// The conversion is CUDA's __nv_cvt_float_to_fp8(v, __NV_SATFINITE, ...): round to nearest, ties to
// even, magnitudes above the largest finite (±inf included) saturate to it, NaN stays NaN, and a
// value rounding to zero keeps its sign. And the delayed recipe's scale over steps.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/fp8.hpp"

namespace xfbench::kernels::ref {

// v converted to the format, as a float.
float fp8_round(float v, Fp8Format f);
// The same conversion's bit pattern (NaN: 0x7F, the canonical NaN of both formats).
std::uint8_t fp8_bits(float v, Fp8Format f);
// The value a bit pattern stores (NaN, and ±inf in E5M2, where the format says so).
float fp8_value(std::uint8_t bits, Fp8Format f);

// The scale each step of the delayed recipe casts one tensor with, given the amax its casts
// recorded at each step (0: not cast): result[0] from step 0's own amax (the first step measures
// it, fp8.hpp; 1 where it is 0), and result[s + 1] the scale
// update() sets after step s, fp8_scale_from_amax(max of the ring, result[s], fp8_max(f), margin),
// where the ring holds the amaxes of the last `history` steps up to s (zeros before the first
// step; NaN entries are ignored, as fmaxf does). Throws InvalidArgument for history < 1.
std::vector<float> fp8_delayed_scales(const std::vector<float>& amax, int history, int margin,
                                      Fp8Format f);

}  // namespace xfbench::kernels::ref
