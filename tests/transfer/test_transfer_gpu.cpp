// Transfer on the GPU: the SM copy (aligned, unaligned, host-mapped, peer), the pattern and
// collective checkers catching corruption, every NCCL op on 1 rank (and 2 with two GPUs), and every
// registered case running through the host. Skipped without a GPU (two-GPU tests without two).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "copy_kernels.hpp"
#include "kernels/comm/nccl_comm.hpp"
#include "test_host.hpp"
#include "test_paths.hpp"
#include "transfer_math.hpp"
#include "xfbench/device.hpp"
#include "xfbench/memory.hpp"
#define XFBENCH_USE_NCCL
#include "xfbench/check_libs.hpp"

using namespace xfbench;
using namespace xfbench::transfer;

namespace {

class TransferGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!gpu_unavailable_reason().empty()) GTEST_SKIP() << gpu_unavailable_reason();
    select_device(0);
  }
};

class TransferTwoGpus : public TransferGpu {
 protected:
  void SetUp() override {
    TransferGpu::SetUp();
    if (IsSkipped()) return;
    if (device_count() < 2) GTEST_SKIP() << "needs two GPUs, " << device_count() << " visible";
  }
};

std::string run_host(const std::string& args, const std::string& json, int* exit_code) {
  std::string cmd = xftest::host_bin() + " " + args +
                    " --xfbench_mode=hot --xfbench_iterations=2 --benchmark_out_format=json"
                    " --benchmark_out=" +
                    json + " >" + json + ".log 2>&1";
  int status = std::system(cmd.c_str());
  *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream f(json);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

// Runs `op` on the communicators of `devices` with `count`-element buffers; returns wrong elements.
long long run_collective(Collective op, Dtype t, std::size_t bytes, const std::vector<int>& devices,
                         bool corrupt) {
  kernels::Communicator& comm = kernels::communicator(devices);
  const int n = comm.nranks;
  CollectiveShape s = shape_for(op, bytes, size_of(t), n);
  EXPECT_GT(s.chunk, 0u);
  const std::size_t es = size_of(t);
  std::vector<DeviceMemory> send, recv;
  std::vector<Stream> streams;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    EXPECT_EQ(cudaSetDevice(devices[i]), cudaSuccess);
    send.emplace_back(s.send_count * es);
    recv.emplace_back(s.recv_count * es);
    streams.emplace_back();
    fill_inputs(send[i].get(), s.send_count, t, comm.ranks[i], streams[i]);
    poison(recv[i].get(), s.recv_count * es, streams[i]);
    streams[i].sync();
  }
  ncclDataType_t type = t == Dtype::fp32   ? ncclFloat32
                        : t == Dtype::fp16 ? ncclFloat16
                                           : ncclBfloat16;
  XF_NCCL_CHECK(ncclGroupStart());
  for (std::size_t i = 0; i < devices.size(); ++i) {
    ncclComm_t c = comm.comms[i];
    const char* in = static_cast<const char*>(send[i].get());
    char* out = static_cast<char*>(recv[i].get());
    int r = comm.ranks[i];
    switch (op) {
      case Collective::allreduce:
        XF_NCCL_CHECK(ncclAllReduce(in, out, s.chunk, type, ncclSum, c, streams[i]));
        break;
      case Collective::allgather:
        XF_NCCL_CHECK(ncclAllGather(in, out, s.chunk, type, c, streams[i]));
        break;
      case Collective::reducescatter:
        XF_NCCL_CHECK(ncclReduceScatter(in, out, s.chunk, type, ncclSum, c, streams[i]));
        break;
      case Collective::broadcast:
        XF_NCCL_CHECK(ncclBroadcast(in, out, s.chunk, type, 0, c, streams[i]));
        break;
      case Collective::reduce:
        XF_NCCL_CHECK(ncclReduce(in, out, s.chunk, type, ncclSum, 0, c, streams[i]));
        break;
      case Collective::alltoall:
        for (int q = 0; q < n; ++q) {
          XF_NCCL_CHECK(ncclSend(in + q * s.chunk * es, s.chunk, type, q, c, streams[i]));
          XF_NCCL_CHECK(ncclRecv(out + q * s.chunk * es, s.chunk, type, q, c, streams[i]));
        }
        break;
      case Collective::sendrecv:
        XF_NCCL_CHECK(ncclSend(in, s.chunk, type, (r + 1) % n, c, streams[i]));
        XF_NCCL_CHECK(ncclRecv(out, s.chunk, type, (r + n - 1) % n, c, streams[i]));
        break;
    }
  }
  XF_NCCL_CHECK(ncclGroupEnd());
  long long wrong = 0;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    EXPECT_EQ(cudaSetDevice(devices[i]), cudaSuccess);
    streams[i].sync();
    if (corrupt && comm.ranks[i] == 0) {  // one element of rank 0's result (defined for all ops)
      EXPECT_EQ(cudaMemset(static_cast<char*>(recv[i].get()) + es * (s.recv_count / 2), 0x41, es),
                cudaSuccess);
    }
    wrong += (long long)count_wrong(static_cast<CheckOp>(int(op)), t, recv[i].get(), s.recv_count,
                                    comm.ranks[i], n, s.chunk, streams[i]);
  }
  cudaSetDevice(devices[0]);
  return wrong;
}

}  // namespace

TEST_F(TransferGpu, SmCopyMatchesSourceAtAnySizeAndAlignment) {
  for (std::size_t bytes : {std::size_t(4), std::size_t(12), std::size_t(4096),
                            std::size_t(1 << 20) + 12, std::size_t(3 << 20)}) {
    SCOPED_TRACE(bytes);
    const std::size_t words = bytes / 4;
    Stream s;
    DeviceMemory src(bytes), dst(bytes + 16);
    fill_pattern(src.get(), words, 3, s);
    poison(dst.get(), bytes + 16, s);
    EXPECT_EQ(count_pattern_mismatches(dst.get(), words, 3, s), words) << "poison must fail";
    sm_copy(dst.get(), src.get(), bytes, s);
    EXPECT_EQ(count_pattern_mismatches(dst.get(), words, 3, s), 0u);
    poison(dst.get(), bytes + 16, s);
    sm_copy(dst.get(), src.get(), bytes, s, 1);  // persistent grid
    EXPECT_EQ(count_pattern_mismatches(dst.get(), words, 3, s), 0u);
    // Not 16-byte aligned: the bytewise path.
    char* shifted = static_cast<char*>(dst.get()) + 4;
    poison(dst.get(), bytes + 16, s);
    sm_copy(shifted, src.get(), bytes, s);
    EXPECT_EQ(count_pattern_mismatches(shifted, words, 3, s), 0u);
    // Corrupting one word is caught.
    ASSERT_EQ(cudaMemset(shifted + 4 * (words / 2), 0x5a, 4), cudaSuccess);
    EXPECT_EQ(count_pattern_mismatches(shifted, words, 3, s), 1u);
  }
}

TEST_F(TransferGpu, SmCopyReachesPinnedHostMemoryBothWays) {
  const std::size_t words = (1 << 20) + 3;
  PinnedBuffer<std::uint32_t> host(words);
  DeviceBuffer<std::uint32_t> dev(words);
  Stream s;
  fill_pattern_host(host.data(), words, 9);
  poison(dev.data(), words * 4, s);
  sm_copy(dev.data(), host.data(), words * 4, s);  // h2d through SMs
  EXPECT_EQ(count_pattern_mismatches(dev.data(), words, 9, s), 0u);
  std::memset(host.data(), 0xFF, words * 4);
  EXPECT_EQ(count_pattern_mismatches_host(host.data(), words, 9), words);
  sm_copy(host.data(), dev.data(), words * 4, s);  // d2h through SMs
  s.sync();
  EXPECT_EQ(count_pattern_mismatches_host(host.data(), words, 9), 0u);
}

TEST_F(TransferGpu, EveryCollectiveOnOneRankIsExactAndCorruptionIsCaught) {
  for (Collective op : all_collectives()) {
    for (Dtype t : {Dtype::fp32, Dtype::fp16, Dtype::bf16}) {
      SCOPED_TRACE(std::string(to_string(op)) + " " + xfbench::to_string(t));
      EXPECT_EQ(run_collective(op, t, 1 << 20, {0}, false), 0);
      EXPECT_EQ(run_collective(op, t, 1 << 20, {0}, true), 1);
    }
  }
}

TEST_F(TransferTwoGpus, EveryCollectiveOnTwoRanksIsExactAndCorruptionIsCaught) {
  for (Collective op : all_collectives()) {
    for (Dtype t : {Dtype::fp32, Dtype::bf16}) {
      for (std::size_t bytes : {std::size_t(8), std::size_t(1 << 20) + 8}) {
        SCOPED_TRACE(std::string(to_string(op)) + " " + xfbench::to_string(t) + " " +
                     std::to_string(bytes));
        if (shape_for(op, bytes, size_of(t), 2).chunk == 0) continue;
        EXPECT_EQ(run_collective(op, t, bytes, {0, 1}, false), 0);
        EXPECT_EQ(run_collective(op, t, bytes, {0, 1}, true), 1);
      }
    }
  }
}

TEST_F(TransferTwoGpus, SmCopyWritesPeerMemory) {
  int ok = 0;
  ASSERT_EQ(cudaDeviceCanAccessPeer(&ok, 0, 1), cudaSuccess);
  if (!ok) GTEST_SKIP() << "GPUs 0 and 1 have no peer access";
  cudaError_t e = cudaDeviceEnablePeerAccess(1, 0);
  ASSERT_TRUE(e == cudaSuccess || e == cudaErrorPeerAccessAlreadyEnabled);
  cudaGetLastError();
  const std::size_t words = 1 << 22;
  DeviceMemory src(words * 4);
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  DeviceMemory dst(words * 4);
  Stream s1;
  poison(dst.get(), words * 4, s1);
  s1.sync();
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  Stream s0;
  fill_pattern(src.get(), words, 4, s0);
  sm_copy(dst.get(), src.get(), words * 4, s0);  // kernel on GPU 0 writing GPU 1
  s0.sync();
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  EXPECT_EQ(count_pattern_mismatches(dst.get(), words, 4, s1), 0u);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
}

// Every registered transfer case runs and validates through the host at small sizes, or is left
// out with the host's summary line when the machine lacks what it needs (P2P on one GPU, pageable
// SM copies without ATS); no errors other than the "unsupported" ones this machine explains.
TEST_F(TransferGpu, EveryCaseRunsThroughTheHost) {
  std::string json = ::testing::TempDir() + "transfer_cases.json";
  int code = -1;
  std::string out = run_host(
      "--benchmark_filter='^(Memcpy|P2P|NCCL)/' --xfbench_memcpy_sizes=4KiB,1MiB+12 "
      "--xfbench_p2p_sizes=64KiB --xfbench_nccl_sizes=8B,1MiB",
      json, &code);
  EXPECT_EQ(code, 2) << "1MiB+12 must be rejected as an invalid size";
  const std::string args =
      "--benchmark_filter='^(Memcpy|P2P|NCCL)/' --xfbench_memcpy_sizes=4KiB,1MiB "
      "--xfbench_p2p_sizes=64KiB --xfbench_nccl_sizes=8B,1MiB";
  const xftest::HostResult listed = xftest::run_host("--benchmark_list_tests " + args);
  ASSERT_EQ(listed.code, 0) << listed.err;
  const std::string names = "\n" + listed.out;  // each name after a newline
  const std::size_t memcpy_cases = 5 * 2 * 2, nccl_cases = 7 * 3 * 2;
  EXPECT_EQ(occurrences(names, "\nMemcpy/"), memcpy_cases);
  EXPECT_EQ(occurrences(names, "\nNCCL/"), nccl_cases);
  const std::size_t p2p_cases = occurrences(names, "\nP2P/");
  EXPECT_GE(p2p_cases, 8u);  // uni/bi x peer/nopeer x ce/sm for one pair at least

  out = run_host(args, json, &code);
  ASSERT_FALSE(out.empty()) << "no JSON written";
  const std::string log = xftest::slurp(json + ".log");
  std::size_t left_out = 0;
  if (const std::size_t at = log.find("xfbench: left out "); at != std::string::npos)
    left_out = std::stoul(log.substr(at + 18));
  const std::size_t ran_memcpy = occurrences(out, "\"name\": \"Memcpy/");
  const std::size_t ran_p2p = occurrences(out, "\"name\": \"P2P/");
  EXPECT_EQ(ran_memcpy + ran_p2p + left_out, memcpy_cases + p2p_cases) << log;
  EXPECT_EQ(occurrences(out, "\"name\": \"NCCL/"), nccl_cases);
  // 8 B split over 4 or more ranks is less than one element per rank for the sharded ops: those
  // cases say so; every other collective is checked.
  std::size_t too_small = 0;
  for (Collective op : all_collectives())
    for (std::size_t elem : {4, 2, 2})  // fp32, fp16, bf16
      for (std::size_t bytes : {std::size_t(8), std::size_t(1) << 20})
        too_small += shape_for(op, bytes, elem, device_count()).chunk == 0;
  EXPECT_EQ(occurrences(out, "element per rank"), too_small);
  EXPECT_EQ(occurrences(out, "\"wrong\": 0") + too_small, nccl_cases);
  EXPECT_EQ(occurrences(out, "validation failed"), 0u);
  std::size_t unsupported = occurrences(out, "unsupported:");
  std::size_t errors = occurrences(out, "\"error_occurred\": true");
  EXPECT_EQ(errors, unsupported) << "every error must be an explained 'unsupported'";
  EXPECT_EQ(code, 0) << "unsupported and left-out cases are no failures";
  if (device_count() >= 2) {
    EXPECT_GE(occurrences(out, "\"latency_us\""), 2u);
  } else {
    EXPECT_EQ(ran_p2p, occurrences(out, "\"name\": \"P2P/topology"));  // no pair case ran
    EXPECT_NE(log.find("need 2 GPUs, this machine has 1"), std::string::npos) << log;
  }
}
