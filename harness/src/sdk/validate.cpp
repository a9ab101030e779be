#include "xfbench/validate.hpp"

#include <cmath>
#include <cstdio>

#include "xfbench/error.hpp"

namespace xfbench {

std::string Comparison::describe() const {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "rel_l2 %.3g, max_abs %.3g at [%zu] (max |ref| %.3g), %zu non-finite of %zu",
                rel_l2_error, max_abs_error, worst_index, max_abs_ref, nonfinite, count);
  return buf;
}

Comparison compare(const std::vector<double>& got, const std::vector<double>& ref) {
  if (got.size() != ref.size()) {
    XF_THROW(ValidationError, "result has " + std::to_string(got.size()) + " elements, reference " +
                                  std::to_string(ref.size()));
  }
  Comparison c;
  c.count = got.size();
  double diff2 = 0, ref2 = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    c.max_abs_ref = std::fmax(c.max_abs_ref, std::fabs(ref[i]));
    if (!std::isfinite(got[i])) {
      ++c.nonfinite;
      continue;
    }
    double d = std::fabs(got[i] - ref[i]);
    if (d > c.max_abs_error) {
      c.max_abs_error = d;
      c.worst_index = i;
    }
    diff2 += d * d;
    ref2 += ref[i] * ref[i];
  }
  c.rel_l2_error = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  return c;
}

bool within(const Comparison& c, const Tolerance& tol) {
  if (c.nonfinite > 0 || c.count == 0) return false;
  if (!(c.rel_l2_error <= tol.rel_l2)) return false;
  if (tol.max_abs >= 0 && !(c.max_abs_error <= tol.max_abs)) return false;
  return true;
}

void require_close(const std::string& what, const Comparison& c, const Tolerance& tol) {
  if (within(c, tol)) return;
  char buf[96];
  if (tol.max_abs >= 0) {
    std::snprintf(buf, sizeof buf, " (tolerance rel_l2 %.3g, max_abs %.3g)", tol.rel_l2,
                  tol.max_abs);
  } else {
    std::snprintf(buf, sizeof buf, " (tolerance rel_l2 %.3g)", tol.rel_l2);
  }
  XF_THROW(ValidationError, what + ": " + c.describe() + buf);
}

void require_close(const std::string& what, const std::vector<double>& got,
                   const std::vector<double>& ref, const Tolerance& tol) {
  require_close(what, compare(got, ref), tol);
}

}  // namespace xfbench
