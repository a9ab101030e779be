// Burn's flag checks and each dtype's product, on the CPU.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "burn_engine.hpp"
#include "burn_options.hpp"
#include "rejection.hpp"
#include "xfbench/error.hpp"

namespace {

using namespace xfbench::burn;
using xfbench::Dtype;
using xfbench::InvalidArgument;
using xftest::rejection;

TEST(BurnOptions, Seconds) {
  EXPECT_EQ(rejection([] { check_seconds(0.5); }), "");
  EXPECT_EQ(rejection([] { check_seconds(0); }),
            "--xfbench_burn_seconds=0: a burn lasts a positive number of seconds");
  EXPECT_NE(rejection([] { check_seconds(-3); }), "");
  EXPECT_NE(rejection([] { check_seconds(std::nan("")); }), "");
}

TEST(BurnOptions, MemoryShare) {
  for (double ok : {1.0, 50.0, 90.0, 95.0}) EXPECT_EQ(rejection([&] { check_mem_pct(ok); }), "");
  EXPECT_EQ(rejection([] { check_mem_pct(96); }),
            "--xfbench_burn_mem_pct=96: expected 1 to 95 (percent of free memory; above 95 "
            "leaves the driver and cuBLAS too little)");
  EXPECT_NE(rejection([] { check_mem_pct(0.5); }), "");
  EXPECT_NE(rejection([] { check_mem_pct(0); }), "");
}

TEST(BurnOptions, Dtypes) {
  EXPECT_EQ(parse_burn_dtypes({}), (std::vector<Dtype>{Dtype::fp64, Dtype::fp32, Dtype::tf32,
                                                       Dtype::bf16, Dtype::fp16, Dtype::fp8}));
  EXPECT_EQ(parse_burn_dtypes({"fp8", "tf32"}), (std::vector<Dtype>{Dtype::fp8, Dtype::tf32}));
  EXPECT_EQ(rejection([] { parse_burn_dtypes({"int8"}); }),
            "--xfbench_burn_dtypes: unknown dtype 'int8' (expected fp64, fp32, tf32, fp16, bf16 "
            "or fp8)");
}

TEST(BurnOptions, Inputs) {
  EXPECT_EQ(parse_burn_inputs("signed"), BurnInputs::signed_unit);
  EXPECT_EQ(parse_burn_inputs("gpu-burn"), BurnInputs::gpu_burn);
  EXPECT_EQ(rejection([] { parse_burn_inputs("positive"); }),
            "--xfbench_burn_inputs=positive: expected signed or gpu-burn");
  for (Dtype t : parse_burn_dtypes({})) {
    const InputRange s = input_range(BurnInputs::signed_unit, t);
    EXPECT_EQ(s.lo, -1);
    EXPECT_EQ(s.hi, 1);
    // gpu-burn's [0, 10) in its own modes only: fp16 results of such products would overflow.
    const bool gpu_burn_mode = t == Dtype::fp64 || t == Dtype::fp32 || t == Dtype::tf32;
    const InputRange g = input_range(BurnInputs::gpu_burn, t);
    EXPECT_EQ(g.lo, gpu_burn_mode ? 0 : -1) << to_string(t);
    EXPECT_EQ(g.hi, gpu_burn_mode ? 10 : 1) << to_string(t);
  }
}

TEST(BurnOptions, ProductsAndNames) {
  for (Dtype t : parse_burn_dtypes({})) {
    const BurnShape s = burn_shape(t);
    EXPECT_EQ(s.m, 8192);
    EXPECT_EQ(s.n, 8192);
    EXPECT_GE(s.k, 16384) << to_string(t);  // the comparison stays near 1% of the time
    EXPECT_EQ(s.trans_b, t != Dtype::fp32 && t != Dtype::fp64) << to_string(t);
    EXPECT_GT(reference_tolerance(t), 0);
    EXPECT_LT(reference_tolerance(t), 0.25) << "a flipped sign or exponent must stay visible";
  }
  EXPECT_LT(reference_tolerance(Dtype::fp64), reference_tolerance(Dtype::fp32));
  EXPECT_LT(reference_tolerance(Dtype::fp16), reference_tolerance(Dtype::bf16));
  EXPECT_EQ(xfbench::kernels::precision_of(Dtype::fp64), xfbench::kernels::Precision::fp64);
  EXPECT_EQ(burn_case_name(Dtype::tf32, 60), "Burn/tf32/seconds:60");
  EXPECT_EQ(burn_case_name(Dtype::bf16, 600, true), "Burn/bf16/seconds:600/cpu:on");
  EXPECT_EQ(burn_case_name(Dtype::fp8, 2.5), "Burn/fp8/seconds:2.5");
}

TEST(BurnOptions, TestFaults) {
  const std::vector<Fault> f = parse_faults("0:3:17:0,1:0:5:30:every");
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].slot, 0);
  EXPECT_EQ(f[0].product, 3u);
  EXPECT_EQ(f[0].element, 17u);
  EXPECT_EQ(f[0].bit, 0u);
  EXPECT_FALSE(f[0].every_product);
  EXPECT_EQ(f[1].slot, 1);
  EXPECT_EQ(f[1].bit, 30u);
  EXPECT_TRUE(f[1].every_product);
  for (const char* bad : {"0:3:17", "0:3:17:x", "0:3:17:1:often", "0:-3:1:1", "0:1:2:3:every:4"})
    EXPECT_NE(rejection([&] { parse_faults(bad); }), "") << bad;
}

TEST(BurnOptions, CpuCaseAndTestFaults) {
  EXPECT_EQ(cpu_burn_case_name(60), "Burn/cpu/seconds:60");
  EXPECT_EQ(cpu_burn_case_name(1.5), "Burn/cpu/seconds:1.5");
  const std::vector<CpuFault> f = parse_cpu_faults("0:3,17:0");
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].cpu, 0);
  EXPECT_EQ(f[0].window, 3u);
  EXPECT_EQ(f[1].cpu, 17);
  EXPECT_EQ(f[1].window, 0u);
  for (const char* bad : {"0", "0:1:2", "x:1", "-1:0", "0:-1", "99999:0", "0:1e3"})
    EXPECT_EQ(rejection([&] { parse_cpu_faults(bad); }),
              std::string("XFBENCH_BURN_TEST_CPU_FAULTS: '") + bad + "' is not cpu:window")
        << bad;
}

TEST(BurnOptions, ReferencePositionsAreFixedAndInside) {
  const BurnShape shape{300, 70, 5};
  const auto a = reference_positions(shape, 500);
  const auto b = reference_positions(shape, 500);
  ASSERT_EQ(a.size(), 500u);
  int distinct_rows = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].row, b[i].row);
    EXPECT_EQ(a[i].col, b[i].col);
    EXPECT_GE(a[i].row, 0);
    EXPECT_LT(a[i].row, 300);
    EXPECT_GE(a[i].col, 0);
    EXPECT_LT(a[i].col, 70);
    distinct_rows += i > 0 && a[i].row != a[i - 1].row;
  }
  EXPECT_GT(distinct_rows, 400);  // spread over the product, not one corner
}

}  // namespace
