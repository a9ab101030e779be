// Its registration throws after adding a case: the host reports it and adds none of its cases.
#include <stdexcept>

#include "xfbench/xfbench.hpp"

namespace {
void register_cases() {
  xfbench::add_case(
      "Throwing/never_registered", [](benchmark::State&) {}, xfbench::Needs::cpu);
  throw std::runtime_error("registration exploded on purpose");
}
}  // namespace
XFBENCH_PLUGIN("throwing", "1.0", "throws while registering", register_cases)
