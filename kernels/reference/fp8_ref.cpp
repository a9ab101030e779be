// FP8 reference conversions and the delayed recipe's scales (see fp8_ref.hpp).
#include "kernels/reference/fp8_ref.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <string>

#include "xfbench/error.hpp"

namespace xfbench::kernels::ref {
namespace {

struct Format {
  int mantissa_bits;  // stored fraction bits (the leading 1 of normals is implicit)
  int bias;
  double max;                                    // largest finite magnitude
  int min_exponent() const { return 1 - bias; }  // of the normals, shared by the subnormals
};

Format format(Fp8Format f) {
  return f == Fp8Format::e4m3 ? Format{3, 7, 448.0} : Format{2, 15, 57344.0};
}

// |v| (finite, <= max) to the nearest multiple of its binade's spacing, ties to the even multiple;
// exact in float64 (a float has 24 significant bits, the quotient below 2^4).
double round_magnitude(double a, const Format& F) {
  if (a == 0) return 0;
  int e;
  std::frexp(a, &e);  // a = m·2^e, m in [0.5, 1): the leading bit is 2^(e-1)
  const int lead = std::max(e - 1, F.min_exponent());
  const double spacing = std::ldexp(1.0, lead - F.mantissa_bits);
  const double q = a / spacing, below = std::floor(q), frac = q - below;
  const bool up = frac > 0.5 || (frac == 0.5 && std::fmod(below, 2.0) == 1.0);
  return (below + (up ? 1 : 0)) * spacing;
}

}  // namespace

float fp8_round(float v, Fp8Format f) {
  if (std::isnan(v)) return v;
  const Format F = format(f);
  const double a = std::abs(double(v));
  const double r = a > F.max ? F.max : round_magnitude(a, F);
  return float(std::copysign(r, double(v)));
}

std::uint8_t fp8_bits(float v, Fp8Format f) {
  if (std::isnan(v)) return 0x7F;
  const Format F = format(f);
  const double r = fp8_round(v, f);
  const unsigned sign = std::signbit(r) ? 0x80u : 0u;
  const double a = std::abs(r);
  if (a == 0) return std::uint8_t(sign);
  int e;
  std::frexp(a, &e);
  const int lead = e - 1;
  unsigned exponent, mantissa;
  if (lead < F.min_exponent()) {  // subnormal: a = mantissa · 2^(min_exponent - mantissa_bits)
    exponent = 0;
    mantissa = unsigned(std::ldexp(a, F.mantissa_bits - F.min_exponent()));
  } else {  // a = (1 + mantissa / 2^mantissa_bits) · 2^lead
    exponent = unsigned(lead + F.bias);
    mantissa = unsigned(std::ldexp(a, F.mantissa_bits - lead)) - (1u << F.mantissa_bits);
  }
  return std::uint8_t(sign | exponent << F.mantissa_bits | mantissa);
}

float fp8_value(std::uint8_t bits, Fp8Format f) {
  const Format F = format(f);
  const int exponent_bits = 7 - F.mantissa_bits;
  const unsigned exponent = (bits >> F.mantissa_bits) & ((1u << exponent_bits) - 1);
  const unsigned mantissa = bits & ((1u << F.mantissa_bits) - 1);
  const unsigned top = (1u << exponent_bits) - 1;
  double a;
  if (f == Fp8Format::e4m3 && exponent == top && mantissa == 7)
    a = std::numeric_limits<double>::quiet_NaN();
  else if (f == Fp8Format::e5m2 && exponent == top)
    a = mantissa ? std::numeric_limits<double>::quiet_NaN()
                 : std::numeric_limits<double>::infinity();
  else if (exponent == 0)
    a = std::ldexp(double(mantissa), F.min_exponent() - F.mantissa_bits);
  else
    a = std::ldexp(double((1u << F.mantissa_bits) | mantissa),
                   int(exponent) - F.bias - F.mantissa_bits);
  return float((bits & 0x80) ? -a : a);
}

std::vector<float> fp8_delayed_scales(const std::vector<float>& amax, int history, int margin,
                                      Fp8Format f) {
  if (history < 1)
    XF_THROW(InvalidArgument, "delayed recipe reference: history " + std::to_string(history));
  // The first step measures its own amax (fp8.hpp); an empty history keeps scale 1.
  std::vector<float> ring(std::size_t(history), 0.f), scales{1.f};
  if (!amax.empty()) scales[0] = fp8_scale_from_amax(amax[0], 1.f, fp8_max(f), margin);
  for (std::size_t s = 0; s < amax.size(); ++s) {
    ring[s % ring.size()] = amax[s];
    float largest = 0.f;
    for (float a : ring)
      if (a > largest) largest = a;  // false for NaN: ignored
    scales.push_back(fp8_scale_from_amax(largest, scales.back(), fp8_max(f), margin));
  }
  return scales;
}

}  // namespace xfbench::kernels::ref
