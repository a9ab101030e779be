// The plugin loader against real .so files: a good plugin and each bad kind.
#include <gtest/gtest.h>

#include "test_paths.hpp"

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
  EXPECT_EQ(loader.plugins()[0].cases, 8u);  // every case, registered with Google Benchmark or not
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

TEST(Loader, ReportsFileThatIsNotALibrary) {
  EXPECT_NE(load_error("not_elf").find("cannot load"), std::string::npos);
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
