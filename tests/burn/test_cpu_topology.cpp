// Cpulists, the cores a burn may use and the sockets they belong to, on the CPU.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cpu_topology.hpp"
#include "fake_sys.hpp"
#include "rejection.hpp"

namespace {

using namespace xfbench::burn;
using xftest::rejection;

TEST(CpuList, Parses) {
  EXPECT_EQ(parse_cpulist("0", "x"), std::vector<int>({0}));
  EXPECT_EQ(parse_cpulist("0-3,8,10-11", "x"), std::vector<int>({0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(parse_cpulist("64-65,0-1", "x"), std::vector<int>({0, 1, 64, 65}));
  EXPECT_EQ(parse_cpulist("5-5", "x"), std::vector<int>({5}));
  EXPECT_EQ(parse_cpulist("0-31,64-95", "x").size(), 64u);
}

TEST(CpuList, RejectsMalformed) {
  for (const char* bad : {"", ",", "0,", ",1", "a", "1-", "-1", "3-1", "1--2", "0-3-5", "1.5", " 1",
                          "0x1", "+1", "99999999999", "65537"}) {
    const std::string why = rejection([&] { parse_cpulist(bad, "--flag"); });
    EXPECT_EQ(why.rfind("--flag: '", 0), 0u) << bad << ": " << why;
    EXPECT_NE(why.find("is not a core or a range of cores"), std::string::npos) << bad;
  }
  EXPECT_EQ(rejection([] { parse_cpulist("0-3,2", "--flag"); }), "--flag: core 2 named twice");
}

TEST(CpuList, Text) {
  EXPECT_EQ(cpulist_text({}), "");
  EXPECT_EQ(cpulist_text({4}), "4");
  EXPECT_EQ(cpulist_text({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
  EXPECT_EQ(cpulist_text(parse_cpulist("0-31,64-95", "x")), "0-31,64-95");
}

TEST(BurnCores, DefaultIsEveryOnlineCoreTheProcessMayUse) {
  EXPECT_EQ(choose_burn_cores({}, {0, 1, 2, 3}, {0, 1, 2, 3, 4}), std::vector<int>({0, 1, 2, 3}));
  EXPECT_EQ(choose_burn_cores({}, {0, 1, 2, 3}, {1, 3}), std::vector<int>({1, 3}));
  EXPECT_NE(rejection([] { choose_burn_cores({}, {0, 1}, {5}); }), "");
}

TEST(BurnCores, NamedCores) {
  const std::vector<int> online = parse_cpulist("0-127", "x");
  EXPECT_EQ(choose_burn_cores({"0-31", "64-95"}, online, online).size(), 64u);
  EXPECT_EQ(choose_burn_cores({"3"}, online, online), std::vector<int>({3}));
  EXPECT_EQ(rejection([&] {
              choose_burn_cores({"0-3", "200"}, online, online);
            }),
            "--xfbench_burn_cpu_cores=0-3,200: core 200 does not exist on this host (online: "
            "0-127)");
  EXPECT_EQ(rejection([&] { choose_burn_cores({"126-129"}, online, online); }),
            "--xfbench_burn_cpu_cores=126-129: cores 128-129 do not exist on this host (online: "
            "0-127)");
  EXPECT_EQ(rejection([&] {
              choose_burn_cores({"0-3", "2-5"}, online, online);
            }),
            "--xfbench_burn_cpu_cores: core 2 named twice");
  EXPECT_EQ(rejection([&] { choose_burn_cores({"x"}, online, online); }),
            "--xfbench_burn_cpu_cores: 'x' is not a core or a range of cores (a cpulist as "
            "'0-31,64-95', cores 0 to 65536)");
  EXPECT_EQ(rejection([&] {
              choose_burn_cores({"0-5"}, online, {0, 1, 2, 3});
            }),
            "--xfbench_burn_cpu_cores=0-5: cores 4-5 online but outside this process's "
            "affinity (0-3: taskset or a cgroup's cpuset)");
}

TEST(BurnCores, OnlineAndSocketsFromSys) {
  xftest::FakeSys sys;
  sys.write("/sys/devices/system/cpu/online", "0-2,4\n");
  for (int c : {0, 1, 2, 4}) {
    sys.write("/sys/devices/system/cpu/cpu" + std::to_string(c) + "/topology/physical_package_id",
              c < 2 ? "0\n" : "1\n");
  }
  const SysFs fs(sys.root());
  EXPECT_EQ(online_cpus(fs), std::vector<int>({0, 1, 2, 4}));
  EXPECT_EQ(package_of(fs, 0), 0);
  EXPECT_EQ(package_of(fs, 4), 1);
  EXPECT_EQ(package_of(fs, 3), -1);  // absent: the burn counts it in socket 0 and says so
  // Without the online file, the cpuN folders (not cpufreq, cpuidle).
  xftest::FakeSys bare;
  bare.write("/sys/devices/system/cpu/cpu0/uevent", "");
  bare.write("/sys/devices/system/cpu/cpu10/uevent", "");
  bare.write("/sys/devices/system/cpu/cpu2/uevent", "");
  bare.write("/sys/devices/system/cpu/cpufreq/x", "");
  EXPECT_EQ(online_cpus(SysFs(bare.root())), std::vector<int>({0, 2, 10}));
}

TEST(BurnCores, ThisProcess) {
  const std::vector<int> allowed = allowed_cpus();
  ASSERT_FALSE(allowed.empty());
  const std::vector<int> online = online_cpus(SysFs());
  ASSERT_FALSE(online.empty());
  EXPECT_FALSE(choose_burn_cores({}, online, allowed).empty());
}

}  // namespace
