// The inventory's listing on a made-up machine of two NVLinked GPUs and one on PCIe, on the CPU.
#include <gtest/gtest.h>

#include <string>

#include "inventory.hpp"
#include "xfbench/gpu_health.hpp"

namespace {

using namespace xfbench;
using namespace xfbench::host;

Inventory three_gpus() {
  Inventory inv;
  inv.driver = "580.159.04";
  inv.cuda_driver = "13.0";
  inv.cuda_runtime = "13.0";
  for (int i = 0; i < 3; ++i) {
    GpuEntry g;
    g.index = i;
    g.name = "NVIDIA H100 80GB HBM3";
    g.uuid = "GPU-000" + std::to_string(i);
    g.pci_bus = "00000000:1" + std::to_string(i) + ":00.0";
    g.cc_major = 9;
    g.cc_minor = 0;
    g.sm_count = 132;
    g.max_sm_mhz = 1980;
    g.max_mem_mhz = 2619;
    g.bus_width_bits = 5120;
    g.mem_gb = 85.02;
    g.pcie = "PCIe Gen5 x16 (now Gen5 x16), 63.0 GB/s per direction";
    g.power_limit_w = i == 2 ? 0 : 700;
    g.ecc = "on";
    inv.gpus.push_back(g);
  }
  inv.links = {{"X", "NV18", "SYS"}, {"NV18", "X", "PHB"}, {"SYS", "PHB", "X"}};
  inv.p2p = {{false, true, false}, {true, false, true}, {false, true, false}};
  return inv;
}

TEST(Inventory, GpuBlocks) {
  const std::string text = format_inventory(three_gpus());
  EXPECT_EQ(text.rfind("xfbench device inventory: 3 GPUs; driver 580.159.04, CUDA 13.0 "
                       "(driver), 13.0 (runtime)\n",
                       0),
            0u)
      << text;
  for (const char* line : {
           "\nGPU0  NVIDIA H100 80GB HBM3\n",
           "\n      UUID         GPU-0000\n",
           "\n      PCI bus      00000000:10:00.0, PCIe Gen5 x16 (now Gen5 x16), 63.0 GB/s per "
           "direction\n",
           "\n      compute      9.0, 132 SMs, SM clock up to 1980 MHz\n",
           "\n      memory       85.0 GB, 5120-bit bus, clock up to 2619 MHz\n",
           "\n      power limit  700 W\n",
           "\n      power limit  unknown\n",
           "\n      ECC          on\n",
       }) {
    EXPECT_NE(text.find(line), std::string::npos) << "missing:" << line << "in:\n" << text;
  }
}

TEST(Inventory, Matrices) {
  const std::string text = format_inventory(three_gpus());
  EXPECT_NE(text.find("\nLinks (as nvidia-smi topo -m)\n"
                      "      GPU0  GPU1  GPU2\n"
                      "GPU0   X    NV18  SYS\n"
                      "GPU1  NV18   X    PHB\n"
                      "GPU2  SYS   PHB    X\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\nP2P access (cudaDeviceCanAccessPeer, row to column)\n"
                      "      GPU0  GPU1  GPU2\n"
                      "GPU0   X    OK    no\n"
                      "GPU1  OK     X    OK\n"
                      "GPU2  no    OK     X\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("Legend: X = self, NV# = # NVLinks"), std::string::npos);
}

TEST(Inventory, OneGpu) {
  Inventory inv = three_gpus();
  inv.gpus.resize(1);
  inv.links = {{"X"}};
  inv.p2p = {{false}};
  const std::string text = format_inventory(inv);
  EXPECT_NE(text.find("inventory: 1 GPU;"), std::string::npos);
  EXPECT_NE(text.find("      GPU0\nGPU0   X\n"), std::string::npos) << text;
}

TEST(Inventory, Cells) {
  EXPECT_EQ(link_cell(18, "SYS"), "NV18");
  EXPECT_EQ(link_cell(0, "PXB"), "PXB");
  EXPECT_EQ(link_cell(-1, "?"), "?");  // NVML could not tell
  // NVML's topology levels, as nvidia-smi topo -m names them.
  EXPECT_EQ(pcie_path_name(0), "PIX");
  EXPECT_EQ(pcie_path_name(10), "PIX");
  EXPECT_EQ(pcie_path_name(20), "PXB");
  EXPECT_EQ(pcie_path_name(30), "PHB");
  EXPECT_EQ(pcie_path_name(40), "NODE");
  EXPECT_EQ(pcie_path_name(50), "SYS");
  EXPECT_EQ(pcie_path_name(7), "?");
}

}  // namespace
