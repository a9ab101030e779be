// Comparing a result with its reference. A case validates once before timing; a mismatch throws
// ValidationError, which the case wrapper reports as "validation failed: ..." and never as a
// number.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace xfbench {

// True the first time a case runs (and --xfbench_validate is on): repetitions validate only once.
bool should_validate();

struct Comparison {
  std::size_t count = 0;
  std::size_t nonfinite = 0;  // NaN or Inf in the result (poisoned, never written, or overflow)
  double max_abs_error = 0;
  std::size_t worst_index = 0;
  double rel_l2_error = 0;  // ||got - ref|| / ||ref||
  double max_abs_ref = 0;
  std::string describe() const;
};

Comparison compare(const std::vector<double>& got, const std::vector<double>& ref);

struct Tolerance {
  double rel_l2 = 1e-3;
  double max_abs = -1;  // < 0: not checked
};

bool within(const Comparison& c, const Tolerance& tol);

// Throws ValidationError "<what>: <comparison> exceeds <tolerance>" unless within tolerance.
void require_close(const std::string& what, const Comparison& c, const Tolerance& tol);
void require_close(const std::string& what, const std::vector<double>& got,
                   const std::vector<double>& ref, const Tolerance& tol);

}  // namespace xfbench
