// Everything a plugin needs, in one include.
#pragma once

#include "xfbench/case.hpp"
#include "xfbench/context.hpp"
#include "xfbench/counters.hpp"
#include "xfbench/device.hpp"
#include "xfbench/dtype.hpp"
#include "xfbench/error.hpp"
#include "xfbench/flags.hpp"
#include "xfbench/memory.hpp"
#include "xfbench/names.hpp"
#include "xfbench/nvml.hpp"
#include "xfbench/plugin.hpp"
#include "xfbench/timer.hpp"
#include "xfbench/validate.hpp"
