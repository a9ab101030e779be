// The plugin loader against real .so files: a good plugin and each bad kind.
#include <gtest/gtest.h>

#include "test_paths.hpp"

#include <cstdio>
#include <fstream>
#include <iterator>

#include "elf_check.hpp"
#include "plugin_loader.hpp"
#include "xfbench/detail/host.hpp"

using xfbench::host::PluginLoader;

namespace {
std::string dir(const std::string& leaf) { return xftest::test_plugin_dir() + "/" + leaf; }

// Loads one folder and returns the single error's reason ("" when none).
std::string load_error(const std::string& leaf) {
  PluginLoader loader;
  loader.load_directory(dir(leaf), true);
  EXPECT_TRUE(loader.plugins().empty());
  if (loader.errors().size() != 1) return "expected exactly one error";
  EXPECT_NE(loader.errors()[0].path.find(leaf), std::string::npos);
  return loader.errors()[0].reason;
}
}  // namespace

TEST(Loader, LoadsGoodPluginAndCountsCases) {
  PluginLoader loader;
  loader.load_directory(dir("good"), true);
  ASSERT_TRUE(loader.errors().empty()) << loader.errors()[0].reason;
  ASSERT_EQ(loader.plugins().size(), 1u);
  EXPECT_EQ(loader.plugins()[0].name, "cputest");
  EXPECT_EQ(loader.plugins()[0].version, "1.0.0");
  EXPECT_EQ(loader.plugins()[0].cases, 10u);  // every case, registered with Google Benchmark or not
  // Loading the same folder again does not load the plugin twice.
  loader.load_directory(dir("good"), true);
  EXPECT_EQ(loader.plugins().size(), 1u);
}

TEST(Loader, RejectsWrongSdkAbi) {
  EXPECT_NE(load_error("bad_abi").find("SDK ABI 999, this host has ABI 1"), std::string::npos);
}

TEST(Loader, RejectsOtherBenchmarkVersion) {
  EXPECT_NE(load_error("bad_benchmark").find("Google Benchmark 1.8.0, this host uses 1.7.1"),
            std::string::npos);
}

TEST(Loader, ReportsUnresolvedSymbol) {
  EXPECT_NE(load_error("unresolved").find("xfbench_test_symbol_that_does_not_exist"),
            std::string::npos);
}

TEST(Loader, ReportsMissingEntryPoint) {
  EXPECT_NE(load_error("no_entry").find("no xfbench entry point"), std::string::npos);
}

TEST(Loader, ReportsFileThatIsNotALibrary) { EXPECT_EQ(load_error("not_elf"), "not an ELF file"); }

// The ELF check before dlopen: every way a good plugin's file can be cut short is caught, the
// whole file passes, and an ELF whose headers point past its end is named as truncated.
TEST(ElfCheck, EveryPrefixOfAPluginIsRejectedAndTheWholeFileAccepted) {
  const std::string plugin = dir("good") + "/xfbench_cputest.so";
  EXPECT_EQ(xfbench::host::elf_problem(plugin), "");
  std::ifstream in(plugin, std::ios::binary);
  const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(data.size(), 4096u);
  const std::string cut = ::testing::TempDir() + "xf_elf_cut.so";
  // Every byte count up to the headers' end, then steps through the rest.
  for (std::size_t n = 0; n < data.size(); n += n < 4096 ? 1 : 997) {
    std::ofstream(cut, std::ios::binary | std::ios::trunc).write(data.data(), std::streamsize(n));
    const std::string why = xfbench::host::elf_problem(cut);
    ASSERT_FALSE(why.empty()) << n << " bytes accepted";
    if (n >= 64) EXPECT_EQ(why.rfind("truncated ELF: ", 0), 0u) << n << ": " << why;
  }
  EXPECT_EQ(xfbench::host::elf_problem("/nonexistent.so").rfind("cannot read: ", 0), 0u);
  EXPECT_EQ(xfbench::host::elf_problem("/tmp"), "not a regular file");
  std::remove(cut.c_str());
}

TEST(Loader, ThrowingRegistrationAddsNoCases) {
  std::size_t before = xfbench::detail::registered_cases().size();
  EXPECT_NE(load_error("throwing").find("registration exploded on purpose"), std::string::npos);
  EXPECT_EQ(xfbench::detail::registered_cases().size(), before);
}

TEST(Loader, MissingDirectoryIsAnErrorOnlyWhenNamed) {
  PluginLoader loader;
  loader.load_directory("/nonexistent/xfbench", false);
  EXPECT_TRUE(loader.errors().empty());
  loader.load_directory("/nonexistent/xfbench", true);
  ASSERT_EQ(loader.errors().size(), 1u);
  EXPECT_EQ(loader.errors()[0].reason, "not a directory");
}
