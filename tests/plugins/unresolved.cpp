// References a function no library defines: loading must fail with the symbol's name.
#include "xfbench/xfbench.hpp"

extern "C" int xfbench_test_symbol_that_does_not_exist(int);

namespace {
void register_cases() { xfbench_test_symbol_that_does_not_exist(1); }
}  // namespace
XFBENCH_PLUGIN("unresolved", "1.0", "unresolved symbol", register_cases)
