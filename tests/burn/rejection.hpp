// The message of the InvalidArgument a call throws, for the tests of flag checks.
#pragma once

#include <string>

#include "xfbench/error.hpp"

namespace xftest {

// The message of the InvalidArgument `f` throws ("" when it throws none).
template <class F>
std::string rejection(F f) {
  try {
    f();
  } catch (const xfbench::InvalidArgument& e) {
    return e.message();
  }
  return "";
}

}  // namespace xftest
