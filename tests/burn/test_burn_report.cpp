// What a burn's results say, on made-up results: TFLOPS per window, verdicts, progress and
// summary lines, counters and the label.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

#include "burn_report.hpp"

namespace {

using namespace xfbench::burn;

// A GPU that ran 4 windows of products of 1e12 FLOP: 100, 110, 90 and 105 TFLOPS.
SlotResult ran(int device) {
  SlotResult s;
  s.device = device;
  s.name = "NVIDIA H100 80GB HBM3";
  s.uuid = "GPU-0000";
  s.flops_per_product = 1e12;
  s.buffers = 100;
  s.mem_bytes = 70e9;
  s.reference_samples = 1024;
  s.peak_tflops = 400;
  for (double tflops : {100.0, 110.0, 90.0, 105.0}) {
    BurnWindow w;
    w.products = 100;
    w.seconds = 100.0 / tflops;
    s.windows.push_back(w);
  }
  s.t0 = 10;
  s.t1 = 13.8;
  s.telemetry.samples = 300;
  s.telemetry.sm_mhz = 1500;
  s.telemetry.mem_mhz = 2619;
  s.telemetry.temp_c = 66;
  s.telemetry.power_w = 500;
  s.telemetry.power_from_energy = true;
  s.telemetry.throttle = {{"sw_power_cap", 1.0}};
  s.ecc_before = {true, 5, 0};
  s.ecc_after = {true, 7, 0};
  s.xid_status = "ok";
  s.algo = "algo=66";
  return s;
}

std::map<std::string, double> counters(const BurnReport& r) {
  std::map<std::string, double> m;
  for (const auto& [name, value] : burn_counters(r)) {
    EXPECT_EQ(m.count(name), 0u) << name << " twice";
    m[name] = value;
  }
  return m;
}

TEST(BurnReport, WindowTflops) {
  const TflopsSummary t = tflops_summary(ran(0));
  EXPECT_NEAR(t.min, 90, 1e-9);
  EXPECT_NEAR(t.median, 102.5, 1e-9);
  EXPECT_NEAR(t.last, 105, 1e-9);
  const double seconds = 1.0 + 100.0 / 110 + 100.0 / 90 + 100.0 / 105;
  EXPECT_NEAR(t.overall, 400 / seconds, 1e-9);
  EXPECT_EQ(tflops_summary(SlotResult{}).overall, 0);
}

TEST(BurnReport, Verdicts) {
  SlotResult s = ran(0);
  EXPECT_FALSE(faulty(s));
  EXPECT_EQ(verdict(s), "OK");  // corrected ECC errors alone are not a fault
  s.windows[1].mismatches = 2;
  s.windows[3].mismatches = 1;
  EXPECT_EQ(mismatches(s), 3u);
  EXPECT_EQ(error_windows(s), 2u);
  EXPECT_EQ(verdict(s), "FAULTY (3 errors)");
  EXPECT_EQ(error_windows_text(s), "2 in window 1, 1 in window 3");
  EXPECT_EQ(error_windows_text(s, 1), "2 in window 1, ...");
  s.reference_errors = 1;
  EXPECT_EQ(verdict(s), "FAULTY (4 errors, 1 of them against the float64 reference)");

  SlotResult wrong_alike = ran(1);
  wrong_alike.reference_errors = 1;
  EXPECT_TRUE(faulty(wrong_alike));
  EXPECT_EQ(verdict(wrong_alike), "FAULTY (1 error, 1 of them against the float64 reference)");

  SlotResult ecc = ran(2);
  ecc.ecc_after.uncorrected = 2;
  EXPECT_EQ(verdict(ecc), "FAULTY (0 errors; 2 new uncorrectable ECC errors)");
  SlotResult xid = ran(3);
  xid.xids = {79, 48};
  EXPECT_EQ(verdict(xid), "FAULTY (0 errors; Xid 79, 48)");
  SlotResult broke = ran(4);
  broke.failure = "cudaErrorIllegalAddress";
  EXPECT_EQ(verdict(broke), "FAULTY (0 errors; cudaErrorIllegalAddress)");

  SlotResult starved;
  starved.not_run = "out of memory: ...";
  EXPECT_FALSE(burned(starved));
  EXPECT_FALSE(faulty(starved));
  EXPECT_EQ(verdict(starved), "NOT RUN (out of memory: ...)");
  starved.unsupported = true;
  starved.not_run = "unsupported: no fp8";
  EXPECT_EQ(verdict(starved), "SKIPPED (unsupported: no fp8)");
}

TEST(BurnReport, ProgressLine) {
  std::vector<LiveSlot> slots(2);
  slots[0] = {0, true, 352.14, 0, 64, 1515, 698.4};
  slots[1] = {3, true, 12.0, 1, 70, 1200, 400};
  EXPECT_EQ(progress_line("Burn/tf32/seconds:60", 24.2, 60, slots),
            "Burn/tf32/seconds:60   40% 0:24/1:00 | gpu0 352.1 TFLOPS, 0 errors, 64 C, 1515 MHz, "
            "698 W | gpu3 12.0 TFLOPS, 1 error, 70 C, 1200 MHz, 400 W");
  slots[0].tflops = 0;
  EXPECT_NE(progress_line("B", 1, 60, slots).find("| gpu0 first window, 0 errors, 64 C"),
            std::string::npos);
  slots[1].burning = false;
  EXPECT_NE(progress_line("B", 61, 60, slots).find("100% 1:01/1:00"), std::string::npos);
  EXPECT_NE(progress_line("B", 61, 60, slots).find("| gpu3 idle"), std::string::npos);
}

TEST(BurnReport, SummaryLine) {
  SlotResult s = ran(0);
  s.windows[2].mismatches = 4;
  const std::string line = summary_line("Burn/bf16/seconds:4", s);
  EXPECT_EQ(line.rfind("Burn/bf16/seconds:4 gpu0 NVIDIA H100 80GB HBM3 GPU-0000: FAULTY (4 "
                       "errors) | ",
                       0),
            0u)
      << line;
  for (const char* part :
       {"(min 90.0, median 102.5, last 105.0)", "400 products", "4 mismatches (4 in window 2)",
        "reference 0/1024 off", "max 66 C", "1500 MHz", "memory 2619 MHz", "500 W",
        "throttle: sw_power_cap 100%", "ECC +2 corrected +0 uncorrectable", "no Xid"}) {
    EXPECT_NE(line.find(part), std::string::npos) << part << " in " << line;
  }
  SlotResult starved;
  starved.not_run = "out of memory: x";
  EXPECT_EQ(summary_line("B", starved), "B gpu0  : NOT RUN (out of memory: x)");
}

TEST(BurnReport, CountersAndLabel) {
  BurnReport r;
  r.slots = {ran(0), ran(1), SlotResult{}};
  r.slots[1].windows[0].mismatches = 3;
  r.slots[2].device = 2;
  r.slots[2].not_run = "out of memory: x";
  const auto c = counters(r);
  const double one = tflops_summary(r.slots[0]).overall;
  const std::map<std::string, double> expected = {
      {"TFLOPS", 2 * one},
      {"gpu0_TFLOPS", one},
      {"gpu1_TFLOPS_min", 90},
      {"gpu0_pct_peak", 100 * one / 400},
      {"errors", 3},
      {"gpu0_errors", 0},
      {"gpu1_errors", 3},
      {"gpu1_error_windows", 1},
      {"gpu1_faulty", 1},
      {"faulty_gpus", 1},
      {"gpus", 2},
      {"gpus_not_run", 1},
      {"gpu2_not_run", 1},
      {"gpu0_products", 400},
      {"gpu0_ecc_corrected", 2},
      {"gpu0_ecc_uncorrected", 0},
      {"gpu0_throttle_sw_power_cap_pct", 100},
      {"gpu0_energy_J", 500 * 3.8},
      {"power_W", 1000},
      {"TFLOPS/W", 2 * one / 1000},
      {"mem_GB", 140},
  };
  for (const auto& [name, value] : expected) {
    ASSERT_EQ(c.count(name), 1u) << name;
    EXPECT_NEAR(c.at(name), value, 1e-9 * std::max(1.0, value)) << name;
  }
  EXPECT_EQ(c.count("gpu2_TFLOPS"), 0u);
  EXPECT_EQ(burn_label(r),
            "gpu0 OK; gpu1 FAULTY (3 errors) [3 in window 0]; gpu2 NOT RUN (out of memory: x); "
            "algo=66");
  r.inputs = {0, 10};  // gpu-burn's inputs are named; the default [-1, 1) is not
  EXPECT_EQ(burn_label(r),
            "gpu0 OK; gpu1 FAULTY (3 errors) [3 in window 0]; gpu2 NOT RUN (out of memory: x); "
            "algo=66; inputs in [0, 10)");
  r.slots[2].unsupported = true;
  EXPECT_EQ(counters(r).at("gpus_not_run"), 0);  // a GPU without the dtype is skipped, not failed
}

}  // namespace
