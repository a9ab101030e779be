// Every case the installed plugins register (--xfbench_suite=all, no GPU visible) against the
// committed list, so that a restructuring cannot rename or drop a case by accident. When names
// change on purpose, rewrite the list and say why in the commit:
//   CUDA_VISIBLE_DEVICES= build/test/bin/xfbench --benchmark_list_tests --xfbench_suite=all \
//     2>/dev/null | sed 's|/iterations:.*||' > tests/harness/all_cases.txt
#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <string>

#include "test_host.hpp"
#include "test_paths.hpp"

namespace {

std::multiset<std::string> lines_of(const std::string& text) {
  std::multiset<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) out.insert(line);
  }
  return out;
}

}  // namespace

TEST(CaseList, EveryCaseAsCommitted) {
  const xftest::HostResult r =
      xftest::run_host("--benchmark_list_tests --xfbench_suite=all", xftest::kNoGpu);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::multiset<std::string> listed = lines_of(xftest::listed_names(r.out, {""}));
  const std::multiset<std::string> committed =
      lines_of(xftest::slurp(xftest::from_test_dir("all_cases.txt")));
  ASSERT_GT(committed.size(), 1000u);
  std::string missing, added;
  for (const std::string& c : committed) {
    if (!listed.count(c)) missing += "\n  " + c;
  }
  for (const std::string& c : listed) {
    if (!committed.count(c)) added += "\n  " + c;
  }
  EXPECT_TRUE(missing.empty()) << "cases no longer registered:" << missing.substr(0, 2000);
  EXPECT_TRUE(added.empty()) << "cases not in tests/harness/all_cases.txt:"
                             << added.substr(0, 2000);
  EXPECT_EQ(listed.size(), committed.size());  // no name twice
}
