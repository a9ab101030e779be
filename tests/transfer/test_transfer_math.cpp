// Transfer arithmetic without a GPU: size parsing, names, byte counts, PCIe peaks, nccl-tests'
// bus factors and buffer shapes, and the expected collective results against a CPU simulation.
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "copy_kernels.hpp"
#include "kernels/comm/nccl_comm.hpp"
#include "pattern.hpp"
#include "test_host.hpp"
#include "transfer_math.hpp"
#include "xfbench/error.hpp"
#include "xfbench/topology.hpp"

using namespace xfbench;
using namespace xfbench::transfer;

// One mapping from stored elements to NCCL's types (the NCCL cases, the data-parallel gradient
// reduction and the tensor-parallel all-reduce all use it); FP8 bytes are not reduced.
TEST(NcclType, FromTheStoredElement) {
  using xfbench::ElemType;
  EXPECT_EQ(xfbench::kernels::nccl_type(ElemType::f32), ncclFloat32);
  EXPECT_EQ(xfbench::kernels::nccl_type(ElemType::f16), ncclFloat16);
  EXPECT_EQ(xfbench::kernels::nccl_type(ElemType::bf16), ncclBfloat16);
  EXPECT_EQ(xfbench::kernels::nccl_type(ElemType::f64), ncclFloat64);
  EXPECT_THROW(xfbench::kernels::nccl_type(ElemType::e4m3), xfbench::InvalidArgument);
}

TEST(TransferSizes, ParseAcceptsBinaryUnits) {
  EXPECT_EQ(parse_size("8", "x"), 8u);
  EXPECT_EQ(parse_size("8B", "x"), 8u);
  EXPECT_EQ(parse_size("4KiB", "x"), 4096u);
  EXPECT_EQ(parse_size("4k", "x"), 4096u);
  EXPECT_EQ(parse_size("64MiB", "x"), 64u << 20);
  EXPECT_EQ(parse_size("1G", "x"), std::size_t(1) << 30);
  EXPECT_EQ(parse_size("4GiB", "x"), std::size_t(4) << 30);
  for (const char* bad :
       {"", "0", "-1", "1.5M", "KiB", "4XB", "4 KiB", "99999999999999999999", "17179869184GiB"}) {
    EXPECT_THROW(parse_size(bad, "nccl_sizes"), InvalidArgument) << bad;
  }
  try {
    parse_size("junk", "nccl_sizes");
  } catch (const InvalidArgument& e) {
    EXPECT_NE(e.message().find("--xfbench_nccl_sizes"), std::string::npos);
  }
  EXPECT_EQ(parse_sizes({"1K", "2K"}, "x"), (std::vector<std::size_t>{1024, 2048}));
  EXPECT_EQ(format_size(8), "8 B");
  EXPECT_EQ(format_size(1536), "1536 B");
  EXPECT_EQ(format_size(4096), "4 KiB");
  EXPECT_EQ(format_size(std::size_t(4) << 30), "4 GiB");
}

TEST(TransferSizes, DefaultLadders) {
  auto m = default_memcpy_sizes();
  ASSERT_EQ(m.size(), 10u);
  EXPECT_EQ(m.front(), 4096u);
  EXPECT_EQ(m.back(), std::size_t(1) << 30);
  auto n = default_nccl_sizes();
  EXPECT_EQ(n.front(), 8u);
  EXPECT_EQ(n.back(), std::size_t(4) << 30);
  EXPECT_EQ(default_p2p_sizes().back(), std::size_t(1) << 30);
}

TEST(TransferNames, AreStable) {
  EXPECT_EQ(memcpy_name(Direction::h2d, HostMemory::pinned, Engine::ce, 4096),
            "Memcpy/h2d/pinned/ce/bytes:4096");
  EXPECT_EQ(memcpy_name(Direction::d2d, HostMemory::device, Engine::sm, 8),
            "Memcpy/d2d/device/sm/bytes:8");
  EXPECT_EQ(p2p_name(P2PMode::bi, false, Engine::ce, 1, 0, 1024),
            "P2P/bi/nopeer/ce/src:1/dst:0/bytes:1024");
  EXPECT_EQ(p2p_latency_name(true, Engine::sm, 0, 1), "P2P/latency/peer/sm/src:0/dst:1");
  EXPECT_EQ(nccl_name(Collective::allreduce, Dtype::bf16, 2, 1024),
            "NCCL/allreduce/bf16/gpus:2/bytes:1024");
  for (Collective c : all_collectives()) EXPECT_EQ(parse_collective(to_string(c)), c);
  EXPECT_THROW(parse_collective("allreduce_sum"), InvalidArgument);
}

TEST(TransferFormulas, BytesCounted) {
  EXPECT_EQ(memcpy_bytes_counted(Direction::d2d, 1000), 2000.0);  // read + write, like Vector
  EXPECT_EQ(memcpy_bytes_counted(Direction::h2d, 1000), 1000.0);  // crosses PCIe once
  EXPECT_EQ(memcpy_bytes_counted(Direction::d2h, 1000), 1000.0);
  EXPECT_EQ(p2p_bytes_counted(P2PMode::uni, 1000), 1000.0);
  EXPECT_EQ(p2p_bytes_counted(P2PMode::bi, 1000), 2000.0);  // both directions
}

TEST(TransferFormulas, PciePeaks) {
  EXPECT_NEAR(pcie_gbs_per_direction(5, 16), 32.0 * 16 / 8 * 128 / 130, 1e-9);  // 63.0
  EXPECT_NEAR(pcie_gbs_per_direction(4, 16), 31.5077, 1e-4);
  EXPECT_NEAR(pcie_gbs_per_direction(3, 8), 7.8769, 1e-4);
  EXPECT_NEAR(pcie_gbs_per_direction(2, 16), 8.0, 1e-9);  // 5 GT/s, 8b/10b
  EXPECT_NEAR(pcie_gbs_per_direction(1, 1), 0.25, 1e-9);
  EXPECT_EQ(pcie_gbs_per_direction(0, 16), 0.0);
  EXPECT_EQ(pcie_gbs_per_direction(5, 0), 0.0);
}

TEST(TransferFormulas, GpuPairs) {
  EXPECT_EQ(gpu_pairs(1), (std::vector<std::pair<int, int>>{{0, 1}, {1, 0}}));
  EXPECT_EQ(gpu_pairs(0), gpu_pairs(1));
  auto p = gpu_pairs(3);
  EXPECT_EQ(p.size(), 6u);
  EXPECT_EQ(p.front(), std::make_pair(0, 1));
  EXPECT_EQ(p.back(), std::make_pair(2, 1));
}

TEST(TransferFormulas, BusFactorsAsNcclTests) {
  EXPECT_DOUBLE_EQ(bus_factor(Collective::allreduce, 2), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::allreduce, 8), 1.75);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::allreduce, 1), 0.0);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::allgather, 8), 0.875);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::reducescatter, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::alltoall, 2), 0.5);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::broadcast, 8), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::reduce, 8), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::sendrecv, 8), 1.0);
}

TEST(TransferFormulas, CollectiveShapes) {
  const std::size_t G = std::size_t(1) << 30;
  auto ar = shape_for(Collective::allreduce, G, 4, 4);
  EXPECT_EQ(ar.send_count, G / 4);
  EXPECT_EQ(ar.recv_count, G / 4);
  EXPECT_EQ(ar.bytes, G);
  auto ag = shape_for(Collective::allgather, G, 4, 4);  // size = the gathered buffer
  EXPECT_EQ(ag.send_count, G / 16);
  EXPECT_EQ(ag.recv_count, G / 4);
  EXPECT_EQ(ag.chunk, G / 16);
  auto rs = shape_for(Collective::reducescatter, G, 2, 4);  // size = the scattered input
  EXPECT_EQ(rs.send_count, G / 2);
  EXPECT_EQ(rs.recv_count, G / 8);
  auto a2a = shape_for(Collective::alltoall, 4096, 4, 3);  // rounded to whole chunks
  EXPECT_EQ(a2a.chunk, 341u);
  EXPECT_EQ(a2a.send_count, 1023u);
  EXPECT_EQ(a2a.bytes, 4092u);
  EXPECT_EQ(shape_for(Collective::allgather, 8, 4, 3).chunk, 0u);  // under one element per rank
  EXPECT_EQ(shape_for(Collective::allreduce, 8, 4, 3).chunk, 2u);
  EXPECT_EQ(shape_for(Collective::broadcast, 8, 2, 1).bytes, 8u);
}

TEST(TransferPattern, WordsDifferBySeedAndIndex) {
  std::map<std::uint32_t, int> seen;
  for (std::uint64_t i = 0; i < 4096; ++i) {
    EXPECT_NE(pattern_word(i, 1), 0u);
    EXPECT_NE(pattern_word(i, 1), pattern_word(i, 2));
    ++seen[pattern_word(i, 1)];
  }
  EXPECT_EQ(seen.size(), 4096u);
  std::vector<std::uint32_t> host(100003);
  fill_pattern_host(host.data(), host.size(), 5);
  EXPECT_EQ(count_pattern_mismatches_host(host.data(), host.size(), 5), 0u);
  EXPECT_EQ(count_pattern_mismatches_host(host.data(), host.size(), 6), host.size());
  host[77777] ^= 1u;
  EXPECT_EQ(count_pattern_mismatches_host(host.data(), host.size(), 5), 1u);
}

// expected_value() against a direct simulation of each collective on per-rank buffers.
TEST(TransferExpected, MatchesSimulatedCollectives) {
  for (int n : {1, 2, 3, 5}) {
    const std::size_t chunk = 7;
    for (Collective op : all_collectives()) {
      CollectiveShape s = shape_for(op, chunk * n * 4, 4, n);
      ASSERT_EQ(s.chunk, op == Collective::allreduce || op == Collective::broadcast ||
                                 op == Collective::reduce || op == Collective::sendrecv
                             ? chunk * n
                             : chunk);
      std::vector<std::vector<double>> send(n), recv(n);
      for (int r = 0; r < n; ++r) {
        for (std::size_t j = 0; j < s.send_count; ++j) send[r].push_back(input_value(r, j));
        recv[r].assign(s.recv_count, -1);
      }
      for (int r = 0; r < n; ++r) {
        for (std::size_t k = 0; k < s.recv_count; ++k) {
          double v = 0;
          switch (op) {
            case Collective::allreduce:
              for (int q = 0; q < n; ++q) v += send[q][k];
              break;
            case Collective::reduce:
              if (r != 0) continue;
              for (int q = 0; q < n; ++q) v += send[q][k];
              break;
            case Collective::allgather:
              v = send[k / s.chunk][k % s.chunk];
              break;
            case Collective::reducescatter:
              for (int q = 0; q < n; ++q) v += send[q][r * s.chunk + k];
              break;
            case Collective::broadcast:
              v = send[0][k];
              break;
            case Collective::alltoall:  // block q of my output is block r of q's input
              v = send[k / s.chunk][r * s.chunk + k % s.chunk];
              break;
            case Collective::sendrecv:  // from the previous rank in the ring
              v = send[(r + n - 1) % n][k];
              break;
          }
          recv[r][k] = v;
        }
        for (std::size_t k = 0; k < s.recv_count; ++k) {
          ASSERT_EQ(expected_value(static_cast<CheckOp>(int(op)), r, n, s.chunk, k), recv[r][k])
              << to_string(op) << " n=" << n << " r=" << r << " k=" << k;
        }
      }
    }
  }
}

TEST(TransferExpected, InputsStaySmallAndExact) {
  for (int r = 0; r < 64; ++r) {
    for (std::size_t j = 0; j < 1000; ++j) {
      int v = input_value(r, j);
      EXPECT_GE(v, 1);
      EXPECT_LE(v, 4);
    }
  }
  EXPECT_EQ(4 * max_exact_ranks(Dtype::bf16), 256);   // bf16: integers exact up to 2^8
  EXPECT_EQ(4 * max_exact_ranks(Dtype::fp16), 2048);  // fp16: up to 2^11
  // Inputs of different ranks differ somewhere in every short block (misplaced blocks are caught).
  for (int r = 1; r < 4; ++r) {
    int differ = 0;
    for (std::size_t j = 0; j < 8; ++j) differ += input_value(0, j) != input_value(r, j);
    EXPECT_GT(differ, 0);
  }
}

// Pageable copies measure the host's memcpy (they repeat within 6-9% only): the default suite
// leaves them out, a filter selects them. Listing needs no GPU.
TEST(MemcpySuite, PageableCopiesNeedAFilter) {
  const xftest::HostResult def = xftest::run_host("--benchmark_list_tests");
  ASSERT_EQ(def.code, 0) << def.err;
  EXPECT_NE(def.out.find("Memcpy/h2d/pinned/ce/bytes:268435456"), std::string::npos) << def.out;
  EXPECT_EQ(def.out.find("/pageable/"), std::string::npos) << def.out;
  const xftest::HostResult filtered =
      xftest::run_host("--benchmark_list_tests --benchmark_filter=Memcpy/d2h/pageable/ce/");
  EXPECT_NE(filtered.out.find("Memcpy/d2h/pageable/ce/bytes:268435456"), std::string::npos)
      << filtered.out;
}
