// The GEMM searches' file (XFBENCH_GEMM_PLANS, kernels/gemm_plans_file.hpp): its records round
// trip, a later search replaces an earlier one of the same GPU, version and key, and a malformed
// line is rejected with the file and line. CPU only; the host reading and writing it is in
// test_gemm_gpu.cpp (GemmGpu.PlansFileCarriesTheSearchesToTheNextRun).
#include <gtest/gtest.h>

#include <unistd.h>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "kernels/gemm_plans_file.hpp"
#include "xfbench/error.hpp"

namespace d = xfbench::kernels::detail;

namespace {

d::SearchRecord record(const std::string& gpu, const std::string& key, int index,
                       const std::string& kernel) {
  d::SearchRecord r;
  r.gpu = gpu;
  r.cublaslt = 130100;
  r.key = key;
  r.product = "bf16 NN m=8192 n=1024 k=4096 out=bf16";
  r.index = index;
  r.candidates = 9;
  r.kernel = kernel;
  return r;
}

std::string parse_error(const std::string& text) {
  std::istringstream in(text);
  try {
    d::parse_search_records(in, "plans.tsv");
  } catch (const xfbench::InvalidArgument& e) {
    return e.message();
  }
  return "";
}

}  // namespace

TEST(GemmPlansFile, RecordsRoundTripAndLaterSearchesReplaceEarlierOnes) {
  std::vector<d::SearchRecord> rs;
  d::upsert_search_record(rs, record("NVIDIA H100 80GB HBM3", "3|3|01|8192,1024,4096", 2,
                                     "algo=66 tile=128x128 stages=64xAUTO heur=2/9"));
  d::upsert_search_record(rs, record("NVIDIA H200", "3|3|01|8192,1024,4096", 8,
                                     "algo=cublasGemmEx compute=32F heur=8/9"));
  d::upsert_search_record(rs, record("NVIDIA H100 80GB HBM3", "3|3|01|8192,1024,4096", 5,
                                     "algo=66 tile=128x256 stages=64xAUTO heur=5/9"));
  ASSERT_EQ(rs.size(), 2u) << "the same GPU, version and key: one record, the later search's";
  EXPECT_EQ(rs[0].index, 5);
  std::ostringstream out;
  d::write_search_records(out, rs);
  std::istringstream in(out.str());
  const std::vector<d::SearchRecord> back = d::parse_search_records(in, "x");
  ASSERT_EQ(back.size(), 2u) << out.str();
  for (std::size_t i = 0; i < back.size(); ++i) {
    EXPECT_EQ(back[i].gpu, rs[i].gpu);
    EXPECT_EQ(back[i].cublaslt, rs[i].cublaslt);
    EXPECT_EQ(back[i].key, rs[i].key);
    EXPECT_EQ(back[i].product, rs[i].product);
    EXPECT_EQ(back[i].index, rs[i].index);
    EXPECT_EQ(back[i].candidates, rs[i].candidates);
    EXPECT_EQ(back[i].kernel, rs[i].kernel);
  }
  const d::SearchRecord* h200 = d::find_search_record(back, "NVIDIA H200", 130100, rs[1].key);
  ASSERT_NE(h200, nullptr);
  EXPECT_EQ(h200->index, 8);
  EXPECT_EQ(d::find_search_record(back, "NVIDIA H200", 130000, rs[1].key), nullptr)
      << "another cuBLASLt version searches again";
  EXPECT_EQ(d::find_search_record(back, "NVIDIA H200", 130100, "other"), nullptr);
}

TEST(GemmPlansFile, MalformedLinesNameTheFileAndLine) {
  const std::string good = "GPU\t130100\tkey\tbf16 NN m=64\t1\t9\talgo=66\n";
  EXPECT_EQ(parse_error("# comment\n\n" + good), "");
  EXPECT_NE(parse_error("# comment\n" + good + "GPU\t130100\tkey\tp\t1\t9\n")
                .find("plans.tsv, line 3: expected 7 tab-separated fields"),
            std::string::npos);
  EXPECT_NE(parse_error("GPU\tnew\tkey\tp\t1\t9\talgo=66\n").find("line 1: cuBLASLt version 'new'"),
            std::string::npos);
  EXPECT_NE(parse_error("GPU\t130100\tkey\tp\t9\t9\talgo=66\n").find("index '9' is not one of 9"),
            std::string::npos);
  EXPECT_NE(parse_error("GPU\t130100\tkey\tp\t-1\t9\talgo=66\n").find("index '-1'"),
            std::string::npos);
  EXPECT_NE(parse_error("GPU\t130100\tkey\tp\t0\t0\talgo=66\n").find("candidate count '0'"),
            std::string::npos);
  EXPECT_NE(parse_error("GPU\t130100\tkey\t\t0\t1\talgo=66\n")
                .find("an empty GPU, key, product or kernel"),
            std::string::npos);
  EXPECT_NE(parse_error("x\n").find("remove the line or the file"), std::string::npos)
      << "every message says what to do";
}

TEST(GemmPlansFile, MissingFileIsEmptyAndWritesReplaceTheWholeFile) {
  const std::string dir = "/tmp/xftest_plans_" + std::to_string(::getpid());
  const std::string path = dir + ".tsv";
  std::remove(path.c_str());
  EXPECT_TRUE(d::read_search_file(path).empty()) << "the first run writes it";
  std::vector<d::SearchRecord> rs{record("GPU", "k1", 1, "algo=1"), record("GPU", "k2", 2, "b")};
  d::write_search_file(path, rs);
  EXPECT_EQ(d::read_search_file(path).size(), 2u);
  rs.pop_back();
  d::write_search_file(path, rs);
  EXPECT_EQ(d::read_search_file(path).size(), 1u);
  std::remove(path.c_str());
  try {
    d::write_search_file(dir + "/missing/plans.tsv", rs);
    ADD_FAILURE() << "wrote into a folder that does not exist";
  } catch (const xfbench::InvalidArgument& e) {
    EXPECT_NE(e.message().find("cannot be written: No such file or directory"), std::string::npos)
        << e.message();
  }
  try {
    d::read_search_file("/tmp");
    ADD_FAILURE() << "read a folder";
  } catch (const xfbench::InvalidArgument& e) {
    EXPECT_NE(e.message().find("/tmp cannot be read: it is a directory"), std::string::npos)
        << e.message();
  }
}
