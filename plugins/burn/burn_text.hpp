// Text the burns' reports share: numbers through a printf format, and m:ss clocks.
#pragma once

#include <cstdio>
#include <string>

namespace xfbench::burn {

inline std::string format(const char* fmt, double a, double b = 0, double c = 0, double d = 0) {
  char text[160];
  std::snprintf(text, sizeof text, fmt, a, b, c, d);
  return text;
}

inline std::string clock_text(double seconds) {  // 0:24, 10:00
  const long s = long(seconds + 0.5);
  char text[32];
  std::snprintf(text, sizeof text, "%ld:%02ld", s / 60, s % 60);
  return text;
}

}  // namespace xfbench::burn
