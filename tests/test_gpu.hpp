// GPU tests skip, with the reason, on a machine without a usable GPU (CI), and otherwise run on
// device 0.
#pragma once

#include <gtest/gtest.h>

#include "xfbench/xfbench.hpp"

#define SKIP_WITHOUT_GPU()                               \
  do {                                                   \
    if (!xfbench::gpu_unavailable_reason().empty())      \
      GTEST_SKIP() << xfbench::gpu_unavailable_reason(); \
    xfbench::select_device(0);                           \
  } while (0)
