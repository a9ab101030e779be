// The host as a user meets it: exit codes, one-line errors, --help, listing and the JSON contract.
// Runs the real xfbench binary on the CPU test plugin (and the bad ones).
#include <gtest/gtest.h>

#include "test_host.hpp"
#include "test_paths.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

using Result = xftest::HostResult;
using xftest::slurp;

Result xfbench(const std::string& args, const std::string& env = "") {
  return xftest::run_host(args, env);
}

std::string plugins(const std::string& leaf) {
  return std::string("--xfbench_plugin_dir=") + xftest::test_plugin_dir() + "/" + leaf;
}

const std::string kNoGpu = "CUDA_VISIBLE_DEVICES=";
const std::string kSum = "--benchmark_filter=CpuTest/sum";

// Lines xfbench itself wrote (Google Benchmark's console reporter also writes to stderr), other
// than progress lines ("xfbench: 3/7 cases, 0:12 elapsed, about 0:20 left").
int xfbench_lines(const std::string& s) {
  static const std::regex progress("^xfbench: [0-9]+/[0-9]+ cases, .* left$");
  int n = 0;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) {
    n += line.rfind("xfbench:", 0) == 0 && !std::regex_match(line, progress);
  }
  return n;
}

double json_number(const std::string& json, const std::string& key) {
  std::smatch m;
  std::regex re("\"" + key + "\": ([-0-9.eE+]+)");
  if (!std::regex_search(json, m, re)) return -1;
  return std::stod(m[1]);
}

}  // namespace

TEST(Cli, ListsPluginsWithoutGpu) {
  Result r = xfbench(plugins("good") + " --xfbench_list_plugins", kNoGpu);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("cputest"), std::string::npos);
  EXPECT_NE(r.out.find("CPU-only cases for testing the host"), std::string::npos);
}

TEST(Cli, ListsTestsWithoutGpu) {
  Result r = xfbench(plugins("good") + " --benchmark_list_tests", kNoGpu);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("CpuTest/sum/fp32/n:4096\n"), std::string::npos);
  // Steady mode: one Google Benchmark iteration per repetition carries the measurement.
  EXPECT_NE(r.out.find("GpuTest/needs_gpu/iterations:1/manual_time\n"), std::string::npos);
  Result hot = xfbench(plugins("good") + " --benchmark_list_tests --xfbench_mode=hot", kNoGpu);
  EXPECT_NE(hot.out.find("GpuTest/needs_gpu/iterations:20/manual_time\n"), std::string::npos);
}

TEST(Cli, DefaultSuiteHoldsSweepsAndOnRequestCasesBack) {
  Result r = xfbench(plugins("good") + " --benchmark_list_tests", kNoGpu);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("CpuTest/sum/fp32/n:4096\n"), std::string::npos);
  EXPECT_EQ(r.out.find("CpuTest/sweep"), std::string::npos);
  EXPECT_EQ(r.out.find("CpuSoak"), std::string::npos);
  // The test plugin holds two sweep cases back (plugins installed beside the host add theirs).
  std::smatch held;
  ASSERT_TRUE(std::regex_search(r.err, held,
                                std::regex("xfbench: default suite, ([0-9]+) cases; "
                                           "([0-9]+) more \\(sweeps")))
      << r.err;
  EXPECT_GE(std::stoi(held[2]), 2);

  Result filtered =
      xfbench(plugins("good") + " --benchmark_list_tests --benchmark_filter=Cpu", kNoGpu);
  EXPECT_NE(filtered.out.find("CpuTest/sweep/fp32/n:8\n"), std::string::npos);
  EXPECT_NE(filtered.out.find("CpuTest/sweep/fp32/n:16\n"), std::string::npos);
  EXPECT_EQ(filtered.out.find("CpuSoak"), std::string::npos);  // its family is not named

  Result soak =
      xfbench(plugins("good") + " --benchmark_list_tests --benchmark_filter=CpuSoak", kNoGpu);
  EXPECT_NE(soak.out.find("CpuSoak/sum/n:64\n"), std::string::npos);

  Result all = xfbench(plugins("good") + " --benchmark_list_tests --xfbench_suite=all", kNoGpu);
  EXPECT_NE(all.out.find("CpuTest/sweep/fp32/n:8\n"), std::string::npos);
  EXPECT_EQ(all.out.find("CpuSoak"), std::string::npos);

  Result bad = xfbench(plugins("good") + " --xfbench_suite=most", kNoGpu);
  EXPECT_EQ(bad.code, 2);
  EXPECT_EQ(xfbench_lines(bad.err), 1) << bad.err;
}

TEST(Cli, CasesTheMachineCannotRunAreLeftOutWithOneSummaryLine) {
  std::string out = ::testing::TempDir() + "xfcli_leftout.json";
  Result r = xfbench(
      plugins("good") + " --benchmark_filter='CpuTest/(sum|leftout)' --benchmark_out=" + out,
      kNoGpu);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find("leftout"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("ERROR OCCURRED"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("CpuTest/sum/fp32/n:4096"), std::string::npos);
  EXPECT_NE(r.err.find("xfbench: left out 1 case this machine cannot run (1 need 2 GPUs, this "
                       "machine has 1)"),
            std::string::npos)
      << r.err;
  const std::string json = slurp(out);
  EXPECT_NE(json.find("CpuTest/sum/fp32/n:4096"), std::string::npos);
  EXPECT_EQ(json.find("leftout"), std::string::npos);
  Result listed =
      xfbench(plugins("good") + " --benchmark_list_tests --benchmark_filter=leftout", kNoGpu);
  EXPECT_NE(listed.out.find("CpuTest/leftout/two_gpus\n"), std::string::npos);
}

TEST(Cli, TimingModeAndProtocolFlagsAreChecked) {
  for (const char* bad : {"--xfbench_mode=warm", "--xfbench_max_noise=0", "--xfbench_min_time=-1",
                          "--xfbench_timeout=0.1", "--xfbench_window_ms=abc",
                          "--xfbench_capped_warmup=-1", "--xfbench_mode=hot --xfbench_l2_flush"}) {
    Result r = xfbench(plugins("good") + " " + kSum + " " + bad, kNoGpu);
    EXPECT_EQ(r.code, 2) << bad;
    EXPECT_EQ(xfbench_lines(r.err), 1) << bad << ": " << r.err;
  }
  Result cold =
      xfbench(plugins("good") + " " + kSum + " --benchmark_format=json --xfbench_l2_flush", kNoGpu);
  EXPECT_NE(cold.out.find("\"xfbench_mode\": \"cold\""), std::string::npos) << cold.out;
}

TEST(Cli, HelpShowsBothKindsOfFlags) {
  Result r = xfbench(plugins("good") + " --help", kNoGpu);
  EXPECT_EQ(r.code, 0);
  for (const char* flag : {"--benchmark_filter", "--xfbench_device", "--xfbench_l2_flush",
                           "--xfbench_validate", "--xfbench_cputest_n", "--xfbench_plugin_dir"}) {
    EXPECT_NE(r.out.find(flag), std::string::npos) << flag;
  }
}

TEST(Cli, JsonCarriesContextAndCounters) {
  Result r = xfbench(
      plugins("good") + " " + kSum + " --benchmark_format=json --xfbench_cputest_n=100000", kNoGpu);
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* key :
       {"\"context\"", "\"xfbench_version\"", "\"cuda_runtime\"", "\"cublas_version\"",
        "\"cudnn_version\"", "\"nccl_version\"", "\"gpu_name\": \"none (",
        "\"xfbench_mode\": \"steady\"", "\"protocol_min_time\": \"0.5\"",
        "\"protocol_max_noise_pct\": \"0.5\"", "\"protocol_timeout\": \"10\"",
        "\"protocol_capped_warmup\": \"1.5\"", "\"name\": \"CpuTest/sum/fp32/n:100000\""}) {
    EXPECT_NE(r.out.find(key), std::string::npos) << key;
  }
  EXPECT_NE(r.out.find("cputest 1.0.0"), std::string::npos);
  // GB/s is the case's declared bytes over its time: 4e5 bytes per iteration.
  double gbs = json_number(r.out, "GB/s");
  double ns = json_number(r.out, "real_time");
  ASSERT_GT(gbs, 0);
  ASSERT_GT(ns, 0);
  EXPECT_NEAR(gbs, 4e5 / ns, 0.3 * gbs);
  EXPECT_NEAR(json_number(r.out, "TFLOPS"), 1e5 / ns / 1e3, 0.3 * json_number(r.out, "TFLOPS"));
}

TEST(Cli, ValidationFailureIsAnErrorNeverANumber) {
  Result r = xfbench(plugins("good") + " --benchmark_filter=CpuTest/fails --benchmark_format=json",
                     kNoGpu);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("\"error_message\": \"validation failed: deliberate: rel_l2"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("\"TFLOPS\""), std::string::npos);
}

// Repetitions of one case that end with and without a number: the runs without are errors (and
// so every later repetition of that case), the others numbers summarised as usual, and the host
// exits 1 (Google Benchmark 1.7 aborted on the unequal iteration counts, or crashed on a null
// pointer when the first repetition was the one without).
TEST(Cli, RepetitionsEndingWithAndWithoutANumberAreReportedNotACrash) {
  Result r = xfbench(plugins("good") +
                         " --benchmark_filter=CpuTest/flaky/third --benchmark_repetitions=3"
                         " --benchmark_format=json",
                     kNoGpu);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.out.find("\"error_message\": \"validation failed: deliberate: repetition 3 fails"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\"aggregate_name\": \"median\""), std::string::npos) << r.out;
  Result first = xfbench(plugins("good") +
                             " --benchmark_filter=CpuTest/flaky/first --benchmark_repetitions=3"
                             " --benchmark_format=json",
                         kNoGpu);
  EXPECT_EQ(first.code, 1) << first.err;
  std::size_t errors = 0;
  for (std::size_t at = 0; (at = first.out.find("the first call fails", at)) != std::string::npos;
       ++at)
    ++errors;
  EXPECT_EQ(errors, 3u) << first.out;  // every repetition says why it has no number
}

TEST(Cli, ValidationCanBeTurnedOff) {
  Result r = xfbench(plugins("good") + " --benchmark_filter=CpuTest/fails --xfbench_validate=false",
                     kNoGpu);
  EXPECT_EQ(r.code, 0) << r.err;  // the wrong result is no longer checked, so the case runs
  EXPECT_EQ(r.out.find("validation failed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("CpuTest/fails/validation"), std::string::npos);
}

TEST(Cli, UnsupportedIsSkippedNotFailed) {
  Result r = xfbench(plugins("good") + " --benchmark_filter=CpuTest/unsupported", kNoGpu);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("unsupported: this case only says it cannot run here"), std::string::npos);
}

TEST(Cli, NoGpuIsOneLineAndItsOwnExitCode) {
  Result r = xfbench(plugins("good") + " --benchmark_filter=GpuTest", kNoGpu);
  EXPECT_EQ(r.code, 4);
  EXPECT_EQ(xfbench_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("1 selected case needs a GPU, but "), std::string::npos) << r.err;
  EXPECT_TRUE(r.err.find("no CUDA device visible") != std::string::npos ||
              r.err.find("no NVIDIA driver found") != std::string::npos)
      << r.err;
}

// XFBENCH_PHASES=1: one line per case on stderr with the seconds between its marks, nothing else
// changed; without it, no such line.
TEST(Cli, PhasesSayWhereACasesTimeGoes) {
  Result r = xfbench(plugins("good") + " " + kSum, kNoGpu + " XFBENCH_PHASES=1");
  EXPECT_EQ(r.code, 0) << r.err;
  const std::regex line(
      "xfbench phases: CpuTest/sum/fp32/n:4096[^:]*: setup [0-9.]+ s, timed "
      "[0-9.]+ s, end [0-9.]+ s\n");
  EXPECT_TRUE(std::regex_search(r.err, line)) << r.err;
  EXPECT_EQ(xfbench_lines(r.err), 0) << r.err;
  Result quiet = xfbench(plugins("good") + " " + kSum, kNoGpu + " XFBENCH_PHASES=0");
  EXPECT_EQ(quiet.code, 0);
  EXPECT_EQ(quiet.err.find("xfbench phases"), std::string::npos) << quiet.err;
}

TEST(Cli, NoGpuStillRunsTheCpuCases) {
  Result r = xfbench(plugins("good") + " --benchmark_filter='(CpuTest/sum|GpuTest)'", kNoGpu);
  EXPECT_EQ(r.code, 4);
  EXPECT_EQ(xfbench_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("Running the CPU cases only."), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("CpuTest/sum/fp32/n:4096"), std::string::npos);
  EXPECT_NE(r.out.find("no usable GPU: "), std::string::npos) << r.out;
}

TEST(Cli, RejectsUnknownAndMalformedFlags) {
  Result unknown = xfbench(plugins("good") + " --xfbench_nonsense=1", kNoGpu);
  EXPECT_EQ(unknown.code, 2);
  EXPECT_NE(unknown.err.find("unknown flag --xfbench_nonsense"), std::string::npos) << unknown.err;

  Result bad_value = xfbench(plugins("good") + " --xfbench_cputest_n=12x", kNoGpu);
  EXPECT_EQ(bad_value.code, 2);
  EXPECT_NE(bad_value.err.find("--xfbench_cputest_n='12x': expected an integer"), std::string::npos)
      << bad_value.err;

  Result bad_gb = xfbench(plugins("good") + " --benchmark_nonsense", kNoGpu);
  EXPECT_EQ(bad_gb.code, 2);

  Result bad_regex = xfbench(plugins("good") + " '--benchmark_filter=(('", kNoGpu);
  EXPECT_EQ(bad_regex.code, 2);
}

TEST(Cli, BadPluginIsOneLineAndOthersStillRun) {
  Result r = xfbench(plugins("good") + " " + plugins("bad_abi") + " " + kSum, kNoGpu);
  EXPECT_EQ(r.code, 3);
  EXPECT_EQ(xfbench_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("xfbench_bad_abi.so: built against xfbench SDK ABI 999"), std::string::npos);
  EXPECT_NE(r.out.find("CpuTest/sum/fp32/n:4096"), std::string::npos);

  Result allowed = xfbench(
      plugins("good") + " " + plugins("bad_abi") + " " + kSum + " --xfbench_allow_plugin_errors",
      kNoGpu);
  EXPECT_EQ(allowed.code, 0) << allowed.err;
}

TEST(Cli, MpiRanksOtherThanZeroWriteTheirOwnJson) {
  std::string out = ::testing::TempDir() + "xfcli_rank.json";
  std::remove(out.c_str());
  std::remove((out + ".rank1").c_str());
  Result r = xfbench(plugins("good") + " " + kSum + " --benchmark_out=" + out,
                     kNoGpu + " OMPI_COMM_WORLD_RANK=1");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(slurp(out + ".rank1").find("CpuTest/sum"), std::string::npos);
  EXPECT_EQ(slurp(out), "");  // rank 0's file is left to rank 0
}

TEST(Cli, PluginPathFromEnvironment) {
  Result r =
      xfbench("--xfbench_list_plugins",
              kNoGpu + " XFBENCH_PLUGIN_PATH=/nonexistent:" + xftest::test_plugin_dir() + "/good");
  EXPECT_EQ(r.code, 3);  // the missing folder is reported
  EXPECT_NE(r.err.find("/nonexistent: not a directory"), std::string::npos);
  EXPECT_NE(r.out.find("cputest"), std::string::npos);
}

TEST(Cli, ContextProvidersRunOnlyWithAGpu) {
  Result no_gpu = xfbench(plugins("good") + " " + kSum + " --benchmark_format=json", kNoGpu);
  EXPECT_EQ(no_gpu.code, 0);
  EXPECT_EQ(no_gpu.out.find("cputest_provider"), std::string::npos);
  Result probe = xfbench(plugins("good") + " --benchmark_filter=GpuTest --xfbench_iterations=1");
  if (probe.code == 4) GTEST_SKIP() << "no GPU here";
  Result gpu = xfbench(plugins("good") + " " + kSum + " --benchmark_format=json");
  EXPECT_NE(gpu.out.find("\"cputest_provider\": \"called\""), std::string::npos) << gpu.out;
  EXPECT_NE(gpu.out.find("\"peak_TFLOPS_bf16\""), std::string::npos);
}

// Out of memory is one case's error; an illegal address breaks the context, and every later GPU
// case is skipped with one line instead of failing in its own confusing way.
TEST(Cli, GpuFaultsStayContained) {
  Result probe = xfbench(plugins("good") + " --benchmark_filter=GpuTest --xfbench_iterations=1");
  if (probe.code == 4) GTEST_SKIP() << "no GPU here";
  Result r = xfbench(plugins("gpu_fault") + " --benchmark_filter=GpuFault --xfbench_iterations=2");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("out of device memory: asked for 1048576.00 GiB"), std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("GpuFault/2_fine/iterations:2/manual_time ERROR"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("cudaErrorIllegalAddress"), std::string::npos) << r.out;
  EXPECT_NE(
      r.out.find(
          "skipped: CUDA context broken by cudaErrorIllegalAddress in GpuFault/3_illegal_address"),
      std::string::npos)
      << r.out;
  EXPECT_EQ(xfbench_lines(r.err), 1) << r.err;
}

TEST(Cli, DeviceIndexOutOfRange) {
  Result probe = xfbench(plugins("good") + " --benchmark_filter=GpuTest --xfbench_iterations=1");
  if (probe.code == 4) GTEST_SKIP() << "no GPU here";
  Result r = xfbench(plugins("good") + " --benchmark_filter=GpuTest --xfbench_device=99");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--xfbench_device=99 is out of range"), std::string::npos) << r.err;
}

// NVML telemetry (sm_MHz, temp_C, power_W) comes with every timed GPU case unless turned off.
TEST(Cli, TelemetryCanBeTurnedOff) {
  Result listed =
      xfbench(plugins("good") + " --benchmark_list_tests=true --xfbench_telemetry=false", kNoGpu);
  EXPECT_EQ(listed.code, 0) << listed.err;  // a known flag, with or without a GPU
  Result probe = xfbench(plugins("good") + " --benchmark_filter=GpuTest --xfbench_iterations=1");
  if (probe.code == 4) GTEST_SKIP() << "no GPU here";
  // GpuFault/2_fine times an empty launch with time_gpu, alone.
  const std::string gpu_case = plugins("gpu_fault") +
                               " --benchmark_filter=GpuFault/2_fine --xfbench_iterations=2 "
                               "--benchmark_format=json";
  Result on = xfbench(gpu_case);
  Result off = xfbench(gpu_case + " --xfbench_telemetry=false");
  ASSERT_EQ(on.code, 0) << on.err;
  ASSERT_EQ(off.code, 0) << off.err;
  if (on.out.find("\"nvml\": \"ok\"") != std::string::npos) {
    EXPECT_NE(on.out.find("\"sm_MHz\""), std::string::npos) << on.out;
  }
  EXPECT_EQ(off.out.find("\"sm_MHz\""), std::string::npos) << off.out;
  EXPECT_EQ(off.out.find("\"power_W\""), std::string::npos) << off.out;
}

namespace {

// Starts the host in the background; returns its pid (the shell execs it).
pid_t start_host(const std::string& args, const std::string& out, const std::string& err) {
  const std::string cmd =
      "exec env " + kNoGpu + " " + xftest::host_bin() + " " + args + " >" + out + " 2>" + err;
  const pid_t pid = fork();
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

// Whether `json` parses as JSON (python3 is on every machine the tests run on).
bool valid_json(const std::string& path) {
  return std::system(
             ("python3 -c 'import json,sys; json.load(open(sys.argv[1]))' " + path + " 2>/dev/null")
                 .c_str()) == 0;
}

}  // namespace

// A run stopped by SIGTERM (a time-out's kill) or Ctrl-C keeps what it measured: the JSON is
// closed with "interrupted" and the cases done so far, and stderr says so in one line.
TEST(Cli, InterruptedRunLeavesValidJsonWithTheCasesDone) {
  for (int sig : {SIGTERM, SIGINT}) {
    const std::string base = ::testing::TempDir() + "xfcli_interrupt_" + std::to_string(sig);
    const std::string json = base + ".json";
    std::remove(json.c_str());  // an earlier run's file must not look like this one's
    // Two CPU cases of about 3 s each: the signal comes while the second runs.
    const pid_t pid = start_host(plugins("good") +
                                     " '--benchmark_filter=CpuTest/(sum|sweep/fp32/n:8$)' "
                                     "--benchmark_min_time=3 --benchmark_out=" +
                                     json,
                                 base + ".out", base + ".err");
    ASSERT_GT(pid, 0);
    bool first_done = false;
    for (int i = 0; i < 300 && !first_done; ++i) {  // up to 30 s
      usleep(100000);
      first_done = slurp(json).find("\"CpuTest/sum/fp32/n:4096\"") != std::string::npos;
    }
    ASSERT_TRUE(first_done) << slurp(base + ".err");
    kill(pid, sig);
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig) << status;
    const std::string text = slurp(json);
    EXPECT_TRUE(valid_json(json)) << text;
    const std::string name = sig == SIGTERM ? "SIGTERM" : "SIGINT";
    EXPECT_NE(text.find("\"interrupted\": \"interrupted by " + name + " after 1 of 2 cases\""),
              std::string::npos)
        << text;
    EXPECT_EQ(text.find("CpuTest/sweep"), std::string::npos);
    const std::string err = slurp(base + ".err");
    EXPECT_NE(err.find("xfbench: interrupted by " + name + " after 1 of 2 cases; " + json +
                       " holds them"),
              std::string::npos)
        << err;
  }
}

// Stopped before its first case ends, the file is still a JSON document, with no case in it.
TEST(Cli, InterruptBeforeTheFirstCaseStillClosesTheJson) {
  const std::string base = ::testing::TempDir() + "xfcli_interrupt_early";
  const std::string json = base + ".json";
  std::remove(json.c_str());
  const pid_t pid =
      start_host(plugins("good") + " " + kSum + " --benchmark_min_time=30 --benchmark_out=" + json,
                 base + ".out", base + ".err");
  for (int i = 0; i < 300 && slurp(json).find("\"benchmarks\": [") == std::string::npos; ++i) {
    usleep(100000);
  }
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(valid_json(json)) << slurp(json);
  EXPECT_NE(slurp(json).find("after 0 of 1 cases"), std::string::npos) << slurp(json);
}

// Filters up to the length limit are compiled and matched without a crash, also in the
// sanitizer build whose stack frames are larger: the limit is what keeps std::regex's recursion
// on the stack. One longer is refused in one line.
TEST(Cli, FiltersUpToTheLengthLimitNeverCrash) {
  const std::size_t limit = 4000;
  const std::vector<std::string> patterns = {
      std::string(limit, 'a'),
      std::string(limit / 2 - 1, '(') + std::string(limit / 2 - 1, ')'),
      [&] {
        std::string p;
        while (p.size() + 5 <= limit) p += "(a|b)";
        return p;
      }(),
      [&] {
        std::string p;
        while (p.size() + 5 <= limit) p += "[a-z]";
        return p;
      }(),
  };
  for (const std::string& p : patterns) {
    Result r =
        xfbench(plugins("good") + " --benchmark_list_tests '--benchmark_filter=" + p + "'", kNoGpu);
    EXPECT_LT(r.code, 128) << p.substr(0, 20) << ": " << r.err;
    EXPECT_TRUE(r.code == 0 || r.code == 2) << p.substr(0, 20) << ": " << r.err;
  }
  Result longer = xfbench(plugins("good") + " --benchmark_list_tests '--benchmark_filter=" +
                              std::string(limit + 1, 'a') + "'",
                          kNoGpu);
  EXPECT_EQ(longer.code, 2);
  EXPECT_EQ(xfbench_lines(longer.err), 1) << longer.err;
  EXPECT_NE(longer.err.find("4001 characters; at most 4000"), std::string::npos) << longer.err;
}
