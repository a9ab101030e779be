// Every case the installed plugins register (--xfbench_suite=all, no GPU visible) against the
// committed list, so that a restructuring cannot rename or drop a case by accident. When names
// change on purpose, rewrite the list and say why in the commit:
//   CUDA_VISIBLE_DEVICES= build/test/bin/xfbench --benchmark_list_tests --xfbench_suite=all \
//     2>/dev/null | sed 's|/iterations:.*||' > tests/harness/all_cases.txt
#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <string>

#include "name_schema.hpp"
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

// Every name the host lists, by default and with the flags that add optional segments (custom
// sizes, fp8 recipes and fast accumulation, dropout, parallel variants, burns beside the CPUs), has
// the shape reports/name_schema.txt gives its family: the reports parse names by that file.
TEST(CaseList, EveryNameHasItsFamilysShape) {
  const std::vector<xftest::NameShape> shapes =
      xftest::parse_name_schema(xftest::slurp(xftest::from_test_dir("name_schema.txt")));
  ASSERT_GT(shapes.size(), 10u);
  const char* listings[] = {
      "--benchmark_list_tests --xfbench_suite=all",
      "--benchmark_list_tests --xfbench_matmul_fp8_fast_accum=true --xfbench_matmul_sweep=fp8 "
      "--benchmark_filter=Matmul/",
      "--benchmark_list_tests --xfbench_bert_hidden=768 --xfbench_bert_heads=12 "
      "--xfbench_bert_intermediate=3072 --xfbench_bert_dropout_pct=0 --xfbench_bert_dtypes=fp8",
      "--benchmark_list_tests --xfbench_gpt2_model=gpt2-large --xfbench_gpt2_dtypes=bf16,fp8",
      "--benchmark_list_tests --xfbench_gpt2_hidden=4096 --xfbench_gpt2_heads=32",
      "--benchmark_list_tests --xfbench_t5_ffn=gated-gelu --xfbench_t5_dropout_pct=5",
      "--benchmark_list_tests --xfbench_llama_model=llama-3.2-1b --xfbench_llama_dtypes=fp8",
      "--benchmark_list_tests --xfbench_train_models=gpt2-medium --xfbench_train_layers=2 "
      "--xfbench_train_precisions=bf16,fp8 --xfbench_train_dropout_pct=0",
      "--benchmark_list_tests --xfbench_train_parallel=dp,zero2,zero3,tp "
      "--benchmark_filter=TrainStep",
      "--benchmark_list_tests --xfbench_train_graph=true --xfbench_train_dropout_pct=0 "
      "--benchmark_filter=TrainStep",
      "--benchmark_list_tests --benchmark_filter=Burn --xfbench_burn_compare=true "
      "--xfbench_burn_host_mem_pct=10 --xfbench_burn_seconds=2.5",
  };
  std::size_t checked = 0;
  for (const char* args : listings) {
    SCOPED_TRACE(args);
    const xftest::HostResult r = xftest::run_host(args, xftest::kNoGpu);
    ASSERT_EQ(r.code, 0) << r.err;
    std::string bad;
    for (const std::string& name : lines_of(xftest::listed_names(r.out, {""}))) {
      ++checked;
      if (!xftest::name_axes(shapes, name)) bad += "\n  " + name;
    }
    EXPECT_TRUE(bad.empty()) << "names of no shape in reports/name_schema.txt:"
                             << bad.substr(0, 2000);
  }
  EXPECT_GT(checked, 1500u);
}

// The matcher itself: axes by name, optional groups whole or absent, literals, and what no shape
// takes.
TEST(CaseList, NameSchemaReadsAxesAndRejectsOtherShapes) {
  const std::vector<xftest::NameShape> shapes = xftest::parse_name_schema(
      "# comment\n"
      "Fam  backend [recipe:] seq: [hidden: heads:] [dropout:]\n"
      "P2P  mode=latency peer src:\n"
      "P2P  mode peer src: bytes:\n");
  auto axes = xftest::name_axes(shapes, "Fam/fused/recipe:current/seq:128/hidden:768/heads:12");
  ASSERT_TRUE(axes);
  EXPECT_EQ((*axes)["backend"], "fused");
  EXPECT_EQ((*axes)["recipe"], "current");
  EXPECT_EQ((*axes)["heads"], "12");
  EXPECT_EQ(axes->count("dropout"), 0u);
  EXPECT_TRUE(xftest::name_axes(shapes, "Fam/fused/seq:128/dropout:0"));
  EXPECT_FALSE(xftest::name_axes(shapes, "Fam/fused/seq:128/hidden:768"));  // half a group
  EXPECT_FALSE(xftest::name_axes(shapes, "Fam/fused/dropout:0/seq:128"));   // order
  EXPECT_FALSE(xftest::name_axes(shapes, "Fam/fused/seq:128/extra"));       // a segment more
  EXPECT_FALSE(xftest::name_axes(shapes, "Fam/seq:128"));                   // one less
  EXPECT_FALSE(xftest::name_axes(shapes, "Other/fused/seq:128"));           // no such family
  EXPECT_EQ((*xftest::name_axes(shapes, "P2P/latency/peer/src:0"))["mode"], "latency");
  EXPECT_EQ((*xftest::name_axes(shapes, "P2P/uni/peer/src:0/bytes:8"))["mode"], "uni");
  EXPECT_FALSE(xftest::name_axes(shapes, "P2P/uni/peer/src:0"));
}
