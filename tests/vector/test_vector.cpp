// Vector: byte counts, the checker catching wrong results, and (with a GPU) every case validated.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include "test_host.hpp"
#include "test_paths.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "vector_kernels.hpp"
#include "xfbench/device.hpp"
#include "xfbench/error.hpp"
#include "xfbench/memory.hpp"

using namespace xfbench;
using namespace xfbench::vector;

TEST(VectorNames, BytesCountReadsAndWrites) {
  EXPECT_EQ(bytes_moved(Op::scale, 1 << 28, Dtype::fp32), 2.0 * 4 * (1 << 28));
  EXPECT_EQ(bytes_moved(Op::copy, 1000, Dtype::fp16), 4000.0);
  EXPECT_EQ(bytes_moved(Op::triad, 1000, Dtype::bf16), 6000.0);
  EXPECT_EQ(bytes_moved(Op::read, 1000, Dtype::fp32), 4000.0);
  EXPECT_EQ(bytes_moved(Op::write, 1000, Dtype::fp32), 4000.0);
  EXPECT_EQ(parse_op("triad"), Op::triad);
  EXPECT_THROW(parse_op("axpy"), InvalidArgument);
}

class VectorGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!gpu_unavailable_reason().empty()) GTEST_SKIP() << gpu_unavailable_reason();
    select_device(0);
  }
};

// Odd sizes exercise the scalar tail; a corrupted element must be caught by the checker.
TEST_F(VectorGpu, KernelsMatchReferenceAndCheckerCatchesCorruption) {
  for (Dtype t : {Dtype::fp32, Dtype::fp16, Dtype::bf16}) {
    for (std::size_t n : {std::size_t(1) << 16, std::size_t(100003)}) {
      for (Op op : {Op::scale, Op::copy, Op::triad, Op::read, Op::write}) {
        SCOPED_TRACE(std::string(to_string(op)) + " " + xfbench::to_string(t) +
                     " n=" + std::to_string(n));
        Stream s;
        DeviceMemory a(n * size_of(t)), b(n * size_of(t)), c(n * size_of(t)), y(n * size_of(t));
        DeviceBuffer<float> partials(reduction_partials());
        fill_uniform(a.get(), n, t, 1, -1, 1, s);
        fill_uniform(b.get(), n, t, 2, -1, 1, s);
        fill_uniform(c.get(), n, t, 3, -1, 1, s);
        poison(y.get(), y.bytes(), s);
        poison(partials.data(), partials.bytes(), s);
        Operands x{a.get(), b.get(), c.get(), y.get(), partials.data()};
        EXPECT_EQ(count_mismatches(op, t, x, n, s), op == Op::read ? 1u : n)
            << "poisoned output must fail";
        launch(op, t, x, n, s);
        EXPECT_EQ(count_mismatches(op, t, x, n, s), 0u);
        // Corrupt one element of the result (or the sum) and expect exactly that to be caught.
        if (op == Op::read) {
          float wrong = 1e6f;
          ASSERT_EQ(cudaMemcpy(partials.data(), &wrong, 4, cudaMemcpyHostToDevice), cudaSuccess);
          ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // the checker runs on another stream
          EXPECT_EQ(count_mismatches(op, t, x, n, s), 1u);
        } else {
          ASSERT_EQ(
              cudaMemset(static_cast<char*>(y.get()) + (n / 2) * size_of(t), 0x7b, size_of(t)),
              cudaSuccess);
          ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // the checker runs on another stream
          EXPECT_EQ(count_mismatches(op, t, x, n, s), 1u);
        }
      }
    }
  }
}

// Every Vector case the plugin registers runs and validates (small sizes, few iterations).
TEST_F(VectorGpu, EveryCaseValidatesThroughTheHost) {
  std::string out = ::testing::TempDir() + "vector_cases.json";
  std::string cmd = xftest::host_bin() +
                    " --benchmark_filter=^Vector/ --xfbench_vector_sizes=14,20,23" +
                    " --xfbench_mode=hot --xfbench_iterations=2 --benchmark_out_format=json"
                    " --benchmark_out=" +
                    out + " >/dev/null 2>&1";
  int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  std::ifstream f(out);
  std::stringstream json;
  json << f.rdbuf();
  EXPECT_EQ(json.str().find("error_occurred"), std::string::npos);
  std::size_t cases = 0;
  for (std::size_t p = json.str().find("\"GB/s\""); p != std::string::npos;
       p = json.str().find("\"GB/s\"", p + 1))
    ++cases;
  EXPECT_EQ(cases, 5u * 3u * 3u);  // ops x dtypes x sizes
}

// Not a test: times the fp32 scale variants at 2^28 (run with --gtest_also_run_disabled_tests).
TEST_F(VectorGpu, DISABLED_TuneScaleVariants) {
  const std::size_t n = std::size_t(1) << 28;
  DeviceBuffer<float> a(n), y(n);
  Stream s;
  fill_uniform(a, Dtype::fp32, 1, -1, 1, s);
  Event start, stop;
  for (int rep = 0; rep < 2; ++rep) {
    for (int v = 0; v < tuning_variants(); ++v) {
      for (int w = 0; w < 3; ++w) launch_tuning_variant(v, a.data(), y.data(), n, s);
      start.record(s);
      const char* name = nullptr;
      for (int i = 0; i < 50; ++i) name = launch_tuning_variant(v, a.data(), y.data(), n, s);
      stop.record(s);
      double sec = stop.elapsed_ms_since(start) / 1e3 / 50;
      ASSERT_EQ(count_mismatches(Op::scale, Dtype::fp32,
                                 Operands{a.data(), nullptr, nullptr, y.data(), nullptr}, n, s),
                0u)
          << name;
      std::printf("variant %d %-36s %8.1f GB/s\n", v, name, 8.0 * n / sec / 1e9);
    }
  }
}

TEST(VectorFlags, BadListsExitWithTheReason) {
  xftest::HostResult r =
      xftest::run_host("--xfbench_vector_sizes=99 --benchmark_list_tests", "CUDA_VISIBLE_DEVICES=");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--xfbench_vector_sizes: '99': expected an integer power-of-two exponent "
                       "from 4 to 34"),
            std::string::npos)
      << r.err;
  r = xftest::run_host("--xfbench_vector_ops=axpy --benchmark_list_tests", "CUDA_VISIBLE_DEVICES=");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--xfbench_vector_ops: unknown value 'axpy'"), std::string::npos) << r.err;
}
