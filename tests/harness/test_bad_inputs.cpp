// Every bad input a user can give the host ends the same way: one line on stderr naming the input
// and the reason, the README's exit code for it, and no signal (no core, no lost run). A table of
// inputs, then a bounded fuzz loop over truncated plugins and random flag values.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "test_host.hpp"
#include "test_paths.hpp"

namespace fs = std::filesystem;

namespace {

using xftest::HostResult;
using xftest::kNoGpu;

std::string good_plugins() { return "--xfbench_plugin_dir=" + xftest::test_plugin_dir() + "/good"; }

// A scratch folder of this test process, emptied per use.
std::string scratch(const std::string& leaf) {
  const fs::path dir =
      fs::path(::testing::TempDir()) / ("xfbad_" + std::to_string(::getpid())) / leaf;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

// The lines of `err` other than progress lines and Google Benchmark's packaging warning.
std::vector<std::string> lines_of(const std::string& err) {
  static const std::regex progress("^xfbench: [0-9]+/[0-9]+ cases, .* left$");
  std::vector<std::string> out;
  std::istringstream in(err);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || std::regex_match(line, progress)) continue;
    if (line.rfind("***WARNING*** Library was built as DEBUG", 0) == 0) continue;
    out.push_back(line);
  }
  return out;
}

// A real plugin installed beside the host (the largest: the most ELF structure to cut into).
std::string real_plugin() {
  const fs::path dir =
      fs::path(xftest::host_bin()).parent_path() / ".." / "lib" / "xfbench" / "plugins";
  std::string best;
  std::uintmax_t size = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".so" && e.file_size(ec) > size) {
      size = e.file_size(ec);
      best = e.path().string();
    }
  }
  return best;
}

// A folder holding the first `bytes` bytes of `plugin` as xfbench_cut.so.
std::string truncated_copy(const std::string& plugin, std::size_t bytes, const std::string& leaf) {
  const std::string dir = scratch(leaf);
  std::ifstream in(plugin, std::ios::binary);
  std::string data(bytes, '\0');
  in.read(data.data(), std::streamsize(bytes));
  data.resize(std::size_t(in.gcount()));
  std::ofstream(dir + "/xfbench_cut.so", std::ios::binary) << data;
  return dir;
}

struct Row {
  std::string args;  // after the host; the good test plugin is always loaded too
  int code;          // the README's exit code
  std::string says;  // a piece of the one line: the input it names
};

// Asserts the contract of one bad input.
void expect_one_line(const HostResult& r, const std::string& args, int code,
                     const std::string& says) {
  SCOPED_TRACE(args);
  EXPECT_LT(r.code, 128) << "ended by a signal\n" << r.err;
  EXPECT_EQ(r.code, code) << r.err;
  const std::vector<std::string> lines = lines_of(r.err);
  ASSERT_EQ(lines.size(), 1u) << r.err;
  EXPECT_EQ(lines[0].rfind("xfbench: ", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find(says), std::string::npos) << lines[0];
  EXPECT_EQ(r.out.find("Traceback"), std::string::npos);
}

void check_rows(const std::vector<Row>& rows) {
  for (const Row& row : rows) {
    const std::string args = good_plugins() + " " + row.args;
    expect_one_line(xftest::run_host(args, kNoGpu), row.args, row.code, row.says);
  }
}

// One CPU case; its results in JSON on stdout, so stderr holds only xfbench's own lines.
const std::string kSum = "--benchmark_filter=CpuTest/sum --benchmark_format=json";

}  // namespace

// The rows of issue 31's table that concern the host's own flags and Google Benchmark's.
TEST(BadInput, BenchmarkFlagsAreCheckedBeforeAnyWork) {
  const std::string long_filter = "--benchmark_filter=" + std::string(20000, 'a');
  check_rows({
      {long_filter, 2, "--benchmark_filter="},
      {"--benchmark_filter=NoSuchCase", 2, "'NoSuchCase' matches no case"},
      {"--benchmark_list_tests --benchmark_filter=NoSuchCase", 2, "matches no case"},
      {"--benchmark_format=xml", 2, "--benchmark_format='xml': expected console, json or csv"},
      {"--benchmark_out_format=xml", 2, "--benchmark_out_format='xml'"},
      {"--benchmark_time_unit=parsec", 2, "--benchmark_time_unit='parsec': expected ns, us"},
      {"--benchmark_repetitions=-1", 2, "--benchmark_repetitions='-1': expected an integer from 1"},
      {"--benchmark_repetitions=0", 2, "--benchmark_repetitions='0'"},
      {"--benchmark_repetitions=abc", 2, "--benchmark_repetitions='abc'"},
      {"--benchmark_repetitions=99999999999", 2, "--benchmark_repetitions='99999999999'"},
      {"--benchmark_min_time=-1", 2, "--benchmark_min_time='-1'"},
      {"--benchmark_min_time=nan", 2, "--benchmark_min_time='nan'"},
      {"--benchmark_min_time=1s", 2, "--benchmark_min_time='1s'"},
      {"--benchmark_min_warmup_time=-2", 2, "--benchmark_min_warmup_time='-2'"},
      {"--benchmark_counters_tabular=maybe", 2, "--benchmark_counters_tabular='maybe'"},
      {"--benchmark_enable_random_interleaving=sometimes", 2,
       "--benchmark_enable_random_interleaving"},
      {"--benchmark_report_aggregates_only=2", 2, "--benchmark_report_aggregates_only='2'"},
      {"--benchmark_color=purple", 2, "--benchmark_color='purple'"},
      {"--benchmark_out=", 2, "--benchmark_out"},
      {"--v=-3", 2, "--v='-3'"},
      {"'--benchmark_filter=(('", 2, "--benchmark_filter"},
      {"--benchmark_nonsense=1", 2, "--benchmark_nonsense"},
      {"positional_word", 2, "positional_word"},
  });
}

TEST(BadInput, OutputFileIsCheckedBeforeTheRun) {
  const std::string dir = scratch("out");
  check_rows({
      {kSum + " --benchmark_out=/nonexistent/dir/x.json", 2, "/nonexistent/dir does not exist"},
      {kSum + " --benchmark_out=" + dir, 2, dir + ": is a directory"},
      {kSum + " --benchmark_out=/proc/x.json", 2, "--benchmark_out=/proc/x.json: cannot create"},
      {kSum + " --benchmark_out=" + dir + "/x.json/y.json", 2, "does not exist"},
  });
  EXPECT_FALSE(fs::exists(dir + "/x.json"));  // the check leaves nothing behind
}

TEST(BadInput, FullDiskLosesNoResultSilently) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full here";
  const HostResult r =
      xftest::run_host(good_plugins() + " " + kSum + " --benchmark_out=/dev/full", kNoGpu);
  expect_one_line(r, "/dev/full", 7, "cannot write /dev/full: No space left on device");
  EXPECT_NE(r.out.find("CpuTest/sum/fp32/n:4096"), std::string::npos);  // the display still has it
}

TEST(BadInput, XfbenchFlagsSpeakTheirOwnUnit) {
  check_rows({
      {"--xfbench_nonsense=1", 2, "unknown flag --xfbench_nonsense"},
      {"--xfbench_mode=warm", 2, "--xfbench_mode"},
      {"--xfbench_suite=most", 2, "--xfbench_suite='most'"},
      {"--xfbench_validate=maybe", 2, "--xfbench_validate='maybe': expected true or false"},
      {"--xfbench_device=abc", 2, "--xfbench_device='abc'"},
      {"--xfbench_device=-1", 2, "--xfbench_device='-1': expected an integer from 0"},
      {"--xfbench_device=4294967296", 2, "--xfbench_device='4294967296'"},
      {"--xfbench_iterations=0", 2, "--xfbench_iterations"},
      {"--xfbench_min_time=-1", 2, "--xfbench_min_time"},
      {"--xfbench_max_noise=0", 2, "--xfbench_max_noise"},
      {"--xfbench_timeout=inf", 2, "--xfbench_timeout='inf'"},
      {"--xfbench_window_ms=abc", 2, "--xfbench_window_ms='abc'"},
      {"--xfbench_cputest_n=1e9", 2, "--xfbench_cputest_n='1e9': expected an integer"},
      {"--xfbench_cputest_n=99999999999999999999", 2, "--xfbench_cputest_n"},
      {"--xfbench_gpus=0,0", 2, "--xfbench_gpus: '0' is given twice"},
      {"--xfbench_gpus=abc", 2, "--xfbench_gpus"},
  });
}

// Flags of the real plugins (installed beside the host by the test build).
TEST(BadInput, PluginFlagsNameTheirLimits) {
  std::string many;
  for (int i = 1; i <= 1001; ++i) many += (i > 1 ? "," : "") + std::to_string(i);
  check_rows({
      {"--xfbench_vector_sizes=20,20", 2, "--xfbench_vector_sizes: '20' is given twice"},
      {"--xfbench_vector_sizes=abc", 2, "--xfbench_vector_sizes"},
      {"--xfbench_vector_sizes=99", 2, "--xfbench_vector_sizes"},
      {"--xfbench_vector_ops=nope", 2, "--xfbench_vector_ops"},
      {"--xfbench_vector_dtypes=fp7", 2, "--xfbench_vector_dtypes"},
      {"--xfbench_bert_batches=8,8", 2, "--xfbench_bert_batches: '8' is given twice"},
      {"--xfbench_bert_batches=" + many, 2, "--xfbench_bert_batches: more than 1000 values"},
      {"--xfbench_bert_batches=1000000000", 2,
       "--xfbench_bert_batches: '1000000000': expected an integer from 1 to 1048576"},
      {"--xfbench_bert_seqs=-5", 2, "--xfbench_bert_seqs: '-5'"},
      {"--xfbench_bert_dtypes=fp32", 2, "--xfbench_bert_dtypes: unknown value 'fp32'"},
      {"--xfbench_bert_backends=magic", 2, "--xfbench_bert_backends: unknown value 'magic'"},
      {"--xfbench_bert_dropout_pct=150", 2,
       "--xfbench_bert_dropout_pct='150': expected an integer percent from 0 to 99"},
      {"--xfbench_bert_hidden=0", 2, "--xfbench_bert_hidden='0'"},
      {"--xfbench_bert_ffn_products=maybe", 2,
       "--xfbench_bert_ffn_products='maybe': expected search, unfused or fused"},
      {"--xfbench_llama_ffn_products=both", 2,
       "--xfbench_llama_ffn_products='both': expected search, unfused or fused"},
      {"--xfbench_gpt2_dropout_pct=-1", 2, "--xfbench_gpt2_dropout_pct='-1'"},
      {"--xfbench_gpt2_model=gpt5", 2, "gpt5"},
      {"--xfbench_t5_dropout_pct=100", 2, "--xfbench_t5_dropout_pct='100'"},
      {"--xfbench_t5_model=t5-huge", 2, "t5-huge"},
      {"--xfbench_train_dropout_pct=abc", 2, "--xfbench_train_dropout_pct='abc'"},
      {"--xfbench_train_models=nope", 2, "--xfbench_train_models: unknown value 'nope'"},
      {"--xfbench_train_accum=0", 2, "--xfbench_train_accum: '0'"},
      {"--xfbench_train_graph=maybe", 2, "--xfbench_train_graph='maybe': expected true or false"},
      {"--xfbench_train_parallel=zero4", 2,
       "--xfbench_train_parallel: 'zero4' is not dp, zero2, zero3"},
      {"--xfbench_matmul_topk=0", 2, "--xfbench_matmul_topk"},
      {"--xfbench_matmul_workspace_mib=-1", 2, "--xfbench_matmul_workspace_mib"},
      {"--xfbench_burn_mem_pct=200 --benchmark_filter=Burn", 2, "--xfbench_burn_mem_pct"},
      {"--xfbench_burn_seconds=-1 --benchmark_filter=Burn", 2, "--xfbench_burn_seconds"},
      {"--xfbench_nccl_timeout_s=-1", 2, "--xfbench_nccl_timeout_s"},
      {"--xfbench_burn_cpu_cores=3-1 --benchmark_filter=Burn/cpu", 2,
       "--xfbench_burn_cpu_cores: '3-1' is not a core or a range of cores"},
      {"--xfbench_burn_cpu_cores=99999 --benchmark_filter=Burn/cpu", 2,
       "--xfbench_burn_cpu_cores: '99999'"},
      {"--xfbench_burn_host_mem_pct=95 --benchmark_filter=Burn/cpu", 2,
       "--xfbench_burn_host_mem_pct='95': expected an integer percent from 0 to 90"},
      {"--xfbench_burn_max_loss_pct=101 --benchmark_filter=Burn/cpu", 2,
       "--xfbench_burn_max_loss_pct='101'"},
      {"--xfbench_burn_compare=maybe --benchmark_filter=Burn/cpu", 2,
       "--xfbench_burn_compare='maybe': expected true or false"},
      {"--xfbench_llama_model=llama-2-7b", 2, "--xfbench_llama_model: unknown model 'llama-2-7b'"},
      {"--xfbench_llama_kv_heads=5", 2, "32 query heads do not split into groups over 5"},
      {"--xfbench_llama_head_dim=-1", 2, "--xfbench_llama_head_dim='-1'"},
      {"--xfbench_llama_seqs=0", 2, "--xfbench_llama_seqs: '0'"},
      {"--xfbench_llama_dtypes=fp4", 2, "--xfbench_llama_dtypes: unknown value 'fp4'"},
      {"--xfbench_train_fp8_recipe=late", 2,
       "--xfbench_train_fp8_recipe='late': expected delayed or current"},
      {"--xfbench_llama_fp8_recipe=best", 2,
       "--xfbench_llama_fp8_recipe='best': expected delayed or current"},
      {"--xfbench_gpt2_fp8_recipe=best", 2,
       "--xfbench_gpt2_fp8_recipe='best': expected delayed or current"},
      {"--xfbench_bert_fp8_recipe=late", 2,
       "--xfbench_bert_fp8_recipe='late': expected delayed or current"},
      {"--xfbench_t5_fp8_recipe=early", 2,
       "--xfbench_t5_fp8_recipe='early': expected delayed or current"},
      {"--xfbench_llama_backends=sdpa", 2, "--xfbench_llama_backends: unknown value 'sdpa'"},
  });
}

TEST(BadInput, BadPluginFilesAreOneLineEach) {
  const std::string fifo_dir = scratch("fifo");
  ASSERT_EQ(::mkfifo((fifo_dir + "/xfbench_fifo.so").c_str(), 0644), 0);
  const std::string dir_dir = scratch("dir");
  fs::create_directories(dir_dir + "/xfbench_folder.so");
  const std::string text_dir = scratch("text");
  std::ofstream(text_dir + "/xfbench_text.so") << "not a library\n";
  const std::string elf32_dir = scratch("elf32");
  std::ofstream(elf32_dir + "/xfbench_elf32.so", std::ios::binary) << std::string(
                                                                          "\x7f"
                                                                          "ELF\x01\x01\x01",
                                                                          7)
                                                                   << std::string(57, '\0');
  const std::string file = text_dir + "/xfbench_text.so";
  check_rows({
      {kSum + " --xfbench_plugin_dir=/nonexistent", 3, "/nonexistent: not a directory"},
      {kSum + " --xfbench_plugin_dir=" + file, 3, "not a directory"},
      {kSum + " --xfbench_plugin_dir=" + fifo_dir, 3, "xfbench_fifo.so: not a regular file"},
      {kSum + " --xfbench_plugin_dir=" + dir_dir, 3, "xfbench_folder.so: not a regular file"},
      {kSum + " --xfbench_plugin_dir=" + text_dir, 3, "xfbench_text.so: not an ELF file"},
      {kSum + " --xfbench_plugin_dir=" + elf32_dir, 3, "xfbench_elf32.so: not a 64-bit ELF"},
  });
}

// A plugin cut short (a copy interrupted, a full disk) took the host down with SIGBUS inside
// dlopen, even with --xfbench_allow_plugin_errors.
TEST(BadInput, TruncatedPluginIsOneLineAndTheOthersRun) {
  const std::string plugin = real_plugin();
  ASSERT_FALSE(plugin.empty()) << "no plugin installed beside the host";
  for (std::size_t bytes : {std::size_t(1), std::size_t(64), std::size_t(1000), std::size_t(50000),
                            std::size_t(200000)}) {
    const std::string dir = truncated_copy(plugin, bytes, "cut");
    for (const char* allow : {"", " --xfbench_allow_plugin_errors"}) {
      const std::string args = kSum + " --xfbench_plugin_dir=" + dir + allow;
      const HostResult r = xftest::run_host(good_plugins() + " " + args, kNoGpu);
      expect_one_line(r, args, *allow ? 0 : 3, "xfbench_cut.so: ");
      EXPECT_NE(r.out.find("CpuTest/sum/fp32/n:4096"), std::string::npos) << args;
    }
  }
}

TEST(BadInput, ShortHelpAndVersion) {
  const HostResult h = xftest::run_host(good_plugins() + " -h", kNoGpu);
  EXPECT_EQ(h.code, 0);
  EXPECT_NE(h.out.find("--benchmark_filter"), std::string::npos);
  EXPECT_NE(h.out.find("Plugin cputest:\n  --xfbench_cputest_n="), std::string::npos) << h.out;
  EXPECT_NE(h.out.find("xfbench flags (host, timing protocol, validation):"), std::string::npos);
  const HostResult v = xftest::run_host("--version", kNoGpu);
  EXPECT_EQ(v.code, 0);
  EXPECT_TRUE(std::regex_search(
      v.out, std::regex("^xfbench [0-9.]+ \\(plugin SDK ABI [0-9]+, Google Benchmark "
                        "[0-9]+\\.[0-9]+\\.[0-9]+\\)\n$")))
      << v.out;
}

// Without a GPU the default suite's line counts the default suite's cases, not every case any
// filter could select, and offers no hint that cannot help: a CPU case it names is one a filter
// selects.
TEST(BadInput, NoGpuCountsTheSuiteItWouldRun) {
  const HostResult listed = xftest::run_host("--benchmark_list_tests", kNoGpu);
  ASSERT_EQ(listed.code, 0) << listed.err;
  std::size_t cases = 0;
  for (char c : listed.out) cases += c == '\n';
  const HostResult r = xftest::run_host("", kNoGpu);
  expect_one_line(r, "(default suite)", 4,
                  std::to_string(cases) + " selected cases need a GPU, but ");
  std::smatch cpu_case;
  if (std::regex_search(r.err, cpu_case,
                        std::regex("Select CPU cases with --benchmark_filter "
                                   "\\(e\\.g\\. '([^']+)'\\)"))) {
    const HostResult cpu = xftest::run_host(
        "--benchmark_list_tests '--benchmark_filter=^" + cpu_case[1].str() + "$'", kNoGpu);
    EXPECT_EQ(cpu.code, 0) << cpu.err;
    EXPECT_EQ(cpu.out, cpu_case[1].str() + "\n");
  } else {
    EXPECT_NE(r.err.find("Run on a machine with a CUDA GPU."), std::string::npos) << r.err;
  }
}

// Random truncation points of a real plugin and random values for every --xfbench_* flag the
// help lists: whatever the input, the host ends with an exit code, never a signal. Bounded in
// count and time so CI stays fast; the seed is printed for a rerun.
TEST(BadInput, FuzzFindsNoSignal) {
  const unsigned seed = unsigned(std::chrono::steady_clock::now().time_since_epoch().count());
  std::mt19937 rng(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  auto time_left = [&] { return std::chrono::steady_clock::now() < deadline; };

  const std::string plugin = real_plugin();
  ASSERT_FALSE(plugin.empty());
  const std::uintmax_t size = fs::file_size(plugin);
  for (int i = 0; i < 25 && time_left(); ++i) {
    const std::size_t cut = std::uniform_int_distribution<std::size_t>(0, size - 1)(rng);
    const std::string dir = truncated_copy(plugin, cut, "fuzz_cut");
    const HostResult r =
        xftest::run_host(good_plugins() + " --xfbench_plugin_dir=" + dir + " " + kSum, kNoGpu);
    EXPECT_LT(r.code, 128) << "cut at " << cut << ":\n" << r.err;
    EXPECT_EQ(r.code, 3) << "cut at " << cut << ":\n" << r.err;
  }

  const HostResult help = xftest::run_host("--help", kNoGpu);
  std::vector<std::string> flags;
  std::istringstream in(help.out);
  static const std::regex flag_line("^  --xfbench_([a-z0-9_]+)=.*");
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_match(line, m, flag_line)) flags.push_back(m[1]);
  }
  ASSERT_GT(flags.size(), 50u) << help.out;
  const std::vector<std::string> values = {"-1",
                                           "0",
                                           "1",
                                           "2",
                                           "-9223372036854775808",
                                           "9223372036854775807",
                                           "99999999999999999999",
                                           "1e308",
                                           "nan",
                                           "inf",
                                           "-inf",
                                           "0x10",
                                           "",
                                           "abc",
                                           ",",
                                           ",,,",
                                           "1,1",
                                           "1,2,3",
                                           "true",
                                           "%s%n",
                                           "\"x",
                                           "..",
                                           "/",
                                           "/dev/null",
                                           "-",
                                           "0.5",
                                           "1e-300",
                                           std::string(300, '9'),
                                           std::string(1000, 'x')};
  for (int i = 0; i < 400 && time_left(); ++i) {
    const std::string& flag = flags[rng() % flags.size()];
    const std::string& value = values[rng() % values.size()];
    // Listing registers every case under the flag (the work a run does before its first case).
    const std::string args = "--benchmark_list_tests '--xfbench_" + flag + "=" + value + "'";
    const HostResult r = xftest::run_host(args, kNoGpu);
    EXPECT_LT(r.code, 128) << args << ":\n" << r.err;
    if (r.code == 2) EXPECT_EQ(lines_of(r.err).size(), 1u) << args << ":\n" << r.err;
  }
}
