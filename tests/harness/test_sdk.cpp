// SDK arithmetic without a GPU: counters, the peak table, dtypes, flags, comparisons.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "xfbench/convert.hpp"
#include "xfbench/counters.hpp"
#include "xfbench/device.hpp"
#include "xfbench/dtype.hpp"
#include "xfbench/error.hpp"
#include "xfbench/flags.hpp"
#include "xfbench/names.hpp"
#include "xfbench/nvml.hpp"
#include "xfbench/validate.hpp"

using namespace xfbench;

TEST(Counters, RatesInPlainUnits) {
  // 2*8192^3 flops in 1.6 ms is 687 TFLOPS (PyTorch's bf16 figure on the H100).
  EXPECT_NEAR(tflops(2.0 * 8192.0 * 8192.0 * 8192.0, 1.6e-3), 687.19, 0.01);
  EXPECT_DOUBLE_EQ(gbps(3e9, 1e-3), 3000.0);
  EXPECT_DOUBLE_EQ(percent_of(494.7, 989.4), 50.0);
  EXPECT_EQ(percent_of(1.0, 0.0), 0.0);
  EXPECT_EQ(tflops(1e12, 0.0), 0.0);
  EXPECT_EQ(median({}), 0.0);
  EXPECT_EQ(median({3.0, 1.0, 2.0}), 2.0);
  EXPECT_EQ(median({4.0, 1.0, 3.0, 2.0}), 2.5);
}

DeviceInfo h100() {
  DeviceInfo d;
  d.name = "NVIDIA H100 80GB HBM3";
  d.cc_major = 9;
  d.sm_count = 132;
  d.bus_width_bits = 5120;
  d.max_sm_clock_mhz = 1980;
  d.max_mem_clock_mhz = 2619;
  return d;
}

TEST(Peaks, DatasheetForKnownProducts) {
  PeakTable p = peaks_for(h100());
  EXPECT_DOUBLE_EQ(p.bf16, 989.4);
  EXPECT_DOUBLE_EQ(p.tflops(Dtype::tf32), 494.7);
  EXPECT_DOUBLE_EQ(p.tflops(Dtype::fp8), 1978.9);
  EXPECT_NEAR(p.mem_gbs, 3352.3, 0.1);  // 2 x 2619 MHz x 640 bytes
  EXPECT_NE(p.source.find("datasheet"), std::string::npos);

  DeviceInfo pcie = h100();
  pcie.name = "NVIDIA H100 PCIe";
  EXPECT_DOUBLE_EQ(peaks_for(pcie).bf16, 756.0);

  DeviceInfo a100 = h100();
  a100.name = "NVIDIA A100-SXM4-80GB";
  a100.cc_major = 8;
  EXPECT_DOUBLE_EQ(peaks_for(a100).fp16, 312.0);
  EXPECT_EQ(peaks_for(a100).fp8, 0.0);  // no fp8 on Ampere
}

TEST(Peaks, PerSmRateForUnknownProducts) {
  DeviceInfo d = h100();
  d.name = "Some Future Hopper";
  PeakTable p = peaks_for(d);
  EXPECT_NEAR(p.bf16, 4096.0 * 132 * 1980e6 / 1e12, 1e-9);
  EXPECT_NE(p.source.find("per-SM"), std::string::npos);
}

TEST(Dtype, NamesRoundTrip) {
  for (Dtype t : {Dtype::fp64, Dtype::fp32, Dtype::tf32, Dtype::fp16, Dtype::bf16, Dtype::fp8}) {
    EXPECT_EQ(parse_dtype(to_string(t)), t);
  }
  EXPECT_EQ(size_of(Dtype::bf16), 2u);
  EXPECT_EQ(size_of(Dtype::tf32), 4u);
  EXPECT_THROW(parse_dtype("fp12"), InvalidArgument);
}

// The element types that store the dtypes: one size for both, tf32 stored as f32, fp8 as e4m3.
TEST(Dtype, ElementTypesStoreThem) {
  for (Dtype t : {Dtype::fp64, Dtype::fp32, Dtype::tf32, Dtype::fp16, Dtype::bf16, Dtype::fp8})
    EXPECT_EQ(elem_size(element_of(t)), size_of(t)) << to_string(t);
  EXPECT_EQ(element_of(Dtype::tf32), ElemType::f32);
  EXPECT_EQ(element_of(Dtype::fp8), ElemType::e4m3);
  EXPECT_EQ(elem_size(ElemType::e5m2), 1u);
  EXPECT_STREQ(to_string(ElemType::bf16), "bf16");
  EXPECT_STREQ(to_string(ElemType::e5m2), "e5m2");
}

// The one set of conversions, on the host: round to nearest even at each type's half-way points,
// exact widening back, double to a 16-bit type rounding once.
TEST(Convert, RoundToNearestEvenAndWidenExactly) {
  EXPECT_EQ(to_float(from_float<__half>(1.0f + 0x1p-11f)), 1.0f);  // half-way: to even (1)
  EXPECT_EQ(to_float(from_float<__half>(1.0f + 3 * 0x1p-11f)), 1.0f + 0x1p-9f);  // to even
  EXPECT_EQ(to_float(from_float<__nv_bfloat16>(1.0f + 0x1p-8f)), 1.0f);
  EXPECT_EQ(to_float(from_float<__nv_bfloat16>(1.0f + 3 * 0x1p-8f)), 1.0f + 0x1p-6f);
  EXPECT_EQ(to_float(from_float<float>(0.1f)), 0.1f);
  EXPECT_EQ(to_float(__nv_fp8_e4m3(448.0f)), 448.0f);
  EXPECT_EQ(to_float(__nv_fp8_e5m2(57344.0f)), 57344.0f);
  // 1 + 2^-11 + 2^-40 in double is just above half-way: once-rounded it goes up; through fp32
  // (which drops the 2^-40) it would land on the tie and go down to 1.
  EXPECT_EQ(to_float(from_double<__half>(1.0 + 0x1p-11 + 0x1p-40)), 1.0f + 0x1p-10f);
  EXPECT_EQ(to_float(from_double<__nv_bfloat16>(1.0 + 0x1p-8 + 0x1p-40)), 1.0f + 0x1p-7f);
  EXPECT_EQ(from_double<double>(0.1), 0.1);
}

// Names segment by segment: bare and keyed values, a tag of segments, and every segment that
// would read back as something else rejected with the name so far.
TEST(Names, CaseNameBuildsAndChecksEverySegment) {
  CaseName n("TrainStep");
  n.add("fused").add("bert-large").add("seq", 128).add("ckpt", "off").add_segments("/layers:2/dp");
  EXPECT_EQ(n.str(), "TrainStep/fused/bert-large/seq:128/ckpt:off/layers:2/dp");
  EXPECT_EQ(CaseName("X").add_segments("").str(), "X");
  auto rejects = [](const std::function<void()>& f, const std::string& what) {
    try {
      f();
      ADD_FAILURE() << "accepted: " << what;
    } catch (const InvalidArgument& e) {
      EXPECT_NE(e.message().find("case name 'X"), std::string::npos) << e.message();
    }
  };
  rejects([] { CaseName("X").add("a/b"); }, "a bare value with '/'");
  rejects([] { CaseName("X").add("a:b"); }, "a bare value with ':'");
  rejects([] { CaseName("X").add(""); }, "an empty value");
  rejects([] { CaseName("X").add("seq", ""); }, "a key without a value");
  rejects([] { CaseName("X").add("s/q", "1"); }, "a key with '/'");
  rejects([] { CaseName("X").add("", "1"); }, "a keyed value without a key");
  rejects([] { CaseName("X").add_segments("seq:1"); }, "segments without their '/'");
  rejects([] { CaseName("X").add_segments("/a//b"); }, "an empty segment");
}

// The cross product runs as nested loops would, first axis outermost; points by key.
TEST(Names, AxesCrossProductInDeclarationOrder) {
  Axes a;
  a.add("dtype", std::vector<std::string>{"fp16", "bf16"}).add("seq", std::vector<int>{128, 512});
  EXPECT_EQ(a.size(), 4u);
  std::vector<std::string> seen;
  a.for_each([&](const AxisPoint& p) {
    seen.push_back(p["dtype"] + "/" + std::to_string(p.integer("seq")));
  });
  EXPECT_EQ(seen, (std::vector<std::string>{"fp16/128", "fp16/512", "bf16/128", "bf16/512"}));
  a.for_each([](const AxisPoint& p) { EXPECT_THROW(p["batch"], InvalidArgument); });
  a.for_each([](const AxisPoint& p) { EXPECT_THROW(p.integer("dtype"), InvalidArgument); });
  EXPECT_THROW(a.add("seq", std::vector<int>{1}), InvalidArgument);
  Axes empty;
  empty.add("dtype", std::vector<std::string>{"fp16"}).add("seq", std::vector<int>{});
  int visits = 0;
  empty.for_each([&](const AxisPoint&) { ++visits; });
  EXPECT_EQ(visits, 0);
  Axes none;  // no axis: one point, the empty product
  none.for_each([&](const AxisPoint&) { ++visits; });
  EXPECT_EQ(visits, 1);
}

TEST(Flags, ParseDeclareAndReject) {
  detail::clear_flags();
  detail::set_flag("t_int", "42");
  detail::set_flag("t_bad_int", "4x");
  detail::set_flag("t_bool", "false");
  detail::set_flag("t_list", "a,b");
  detail::set_flag("t_list", "c");
  detail::set_flag("t_nobody", "1");
  EXPECT_EQ(flag_int("t_int", 1, ""), 42);
  EXPECT_EQ(flag_int("t_absent", 7, ""), 7);
  EXPECT_THROW(flag_int("t_bad_int", 1, ""), InvalidArgument);
  EXPECT_FALSE(flag_bool("t_bool", true, ""));
  EXPECT_EQ(flag_list("t_list", ""), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(detail::unknown_flags(), std::vector<std::string>{"t_nobody"});
  detail::clear_flags();
}

namespace {
// The message a flag reader throws, or "" when it accepts the value.
template <class F>
std::string rejection_of(F read) {
  try {
    read();
  } catch (const InvalidArgument& e) {
    return e.message();
  }
  return "";
}
}  // namespace

TEST(Flags, RangesListsAndChoicesNameTheirLimits) {
  detail::clear_flags();
  detail::set_flag("t_pct", "150");
  detail::set_flag("t_ok_pct", "10");
  detail::set_flag("t_big", "99999999999999999999");
  detail::set_flag("t_twice", "20,8");
  detail::set_flag("t_twice", "20");
  detail::set_flag("t_ints", "1,2,4");
  detail::set_flag("t_int_bad", "1e9");
  detail::set_flag("t_int_far", "1000000000");
  detail::set_flag("t_choice", "fp16,fp8");
  std::string many;
  for (std::size_t i = 0; i <= kMaxListItems; ++i) many += std::to_string(i) + ",";
  detail::set_flag("t_many", many);
  const IntRange pct{0, 99, "percent"};
  EXPECT_EQ(flag_int("t_ok_pct", 5, "", pct), 10);
  EXPECT_EQ(flag_int("t_absent_pct", 5, "", pct), 5);
  EXPECT_EQ(rejection_of([&] { flag_int("t_pct", 10, "", pct); }),
            "--xfbench_t_pct='150': expected an integer percent from 0 to 99");
  EXPECT_EQ(rejection_of([&] { flag_int("t_big", 1, ""); }),
            "--xfbench_t_big='99999999999999999999': expected an integer");
  EXPECT_EQ(rejection_of([&] { flag_list("t_twice", ""); }),
            "--xfbench_t_twice: '20' is given twice (each value makes its own cases)");
  EXPECT_EQ(rejection_of([&] { flag_list("t_many", ""); }),
            "--xfbench_t_many: more than 1000 values");
  const IntRange count{1, 1 << 20, ""};
  EXPECT_EQ(flag_int_list("t_ints", "", {7}, count), (std::vector<long>{1, 2, 4}));
  EXPECT_EQ(flag_int_list("t_absent_ints", "", {7}, count), (std::vector<long>{7}));
  EXPECT_EQ(rejection_of([&] { flag_int_list("t_int_bad", "", {}, count); }),
            "--xfbench_t_int_bad: '1e9': expected an integer from 1 to 1048576");
  EXPECT_EQ(rejection_of([&] { flag_int_list("t_int_far", "", {}, count); }),
            "--xfbench_t_int_far: '1000000000': expected an integer from 1 to 1048576");
  EXPECT_EQ(rejection_of([&] {
              flag_choice_list("t_choice", "", {}, {"fp16", "bf16"});
            }),
            "--xfbench_t_choice: unknown value 'fp8' (expected fp16, bf16)");
  EXPECT_EQ(flag_choice_list("t_absent_choice", "", {"bf16"}, {"fp16", "bf16"}),
            (std::vector<std::string>{"bf16"}));
  detail::clear_flags();
}

// --xfbench_gpus, read the same way by P2P, NCCL, multi-GPU TrainStep and Burn.
TEST(Flags, GpuList) {
  auto rejection = [](const std::vector<std::string>& items, int visible) {
    return rejection_of([&] { parse_gpus(items, visible); });
  };
  EXPECT_EQ(parse_gpus({"0", "3", "1"}, 4), (std::vector<int>{0, 3, 1}));
  EXPECT_EQ(parse_gpus({"7"}, -1), (std::vector<int>{7}));  // no GPU: listing only
  EXPECT_TRUE(parse_gpus({}, 0).empty());
  EXPECT_EQ(rejection({"x"}, 2), "--xfbench_gpus: 'x' is not a GPU index");
  EXPECT_EQ(rejection({"-1"}, 2), "--xfbench_gpus: '-1' is not a GPU index");
  EXPECT_EQ(rejection({"1x"}, 2), "--xfbench_gpus: '1x' is not a GPU index");
  EXPECT_EQ(rejection({"1", "1"}, 2), "--xfbench_gpus: GPU 1 is named twice");
  EXPECT_EQ(rejection({"0", "1"}, 1),
            "--xfbench_gpus: GPU 1 is out of range: 1 CUDA device visible (valid: 0..0)");
  EXPECT_EQ(rejection({"8"}, 8),
            "--xfbench_gpus: GPU 8 is out of range: 8 CUDA devices visible (valid: 0..7)");
}

TEST(Validate, ComparisonCatchesErrorsAndNaN) {
  std::vector<double> ref{1, 2, 3, 4};
  EXPECT_TRUE(within(compare({1, 2, 3, 4}, ref), {1e-12}));
  Comparison c = compare({1, 2, 3.1, 4}, ref);
  EXPECT_NEAR(c.max_abs_error, 0.1, 1e-12);
  EXPECT_EQ(c.worst_index, 2u);
  EXPECT_NEAR(c.rel_l2_error, 0.1 / std::sqrt(30.0), 1e-12);
  EXPECT_FALSE(within(c, {1e-3}));
  EXPECT_TRUE(within(c, {0.1}));
  EXPECT_FALSE(within(c, {0.1, 0.05}));  // max_abs limit
  Comparison n = compare({1, NAN, 3, 4}, ref);
  EXPECT_EQ(n.nonfinite, 1u);
  EXPECT_FALSE(within(n, {1.0}));
  EXPECT_THROW(require_close("x", {1.0}, {2.0}, {1e-3}), ValidationError);
  EXPECT_THROW(compare({1.0}, {1.0, 2.0}), ValidationError);
}

TEST(Errors, CarryFileAndLine) {
  try {
    XF_THROW(InvalidArgument, "bad shape");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("test_sdk.cpp:"), std::string::npos);
    EXPECT_EQ(e.message(), "bad shape");
  }
}

TEST(Nvml, LoadedAtRunTimeOrSaysWhyNot) {
  if (nvml_status() == "ok") {
    EXPECT_NE(nvml_symbol("nvmlDeviceGetCount_v2"), nullptr);
    EXPECT_EQ(nvml_symbol("nvmlNoSuchFunction"), nullptr);
  } else {
    EXPECT_NE(nvml_status().find("libnvidia-ml"), std::string::npos) << nvml_status();
    EXPECT_EQ(nvml_symbol("nvmlDeviceGetCount_v2"), nullptr);
  }
}
