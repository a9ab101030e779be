// GPU cases that fail on purpose, in this order: out of memory (the next cases still run), an
// illegal address (the context breaks), and a case that must then be skipped with one line.
#include "xfbench/xfbench.hpp"

void launch_illegal_write(cudaStream_t stream);

namespace {

void register_cases() {
  xfbench::add_case("GpuFault/1_out_of_memory", [](benchmark::State&) {
    xfbench::DeviceBuffer<char> huge(std::size_t(1) << 50);  // 1 PiB
  });
  xfbench::add_case("GpuFault/2_fine", [](benchmark::State& s) {
    xfbench::Stream stream;
    xfbench::time_gpu(s, stream, [](cudaStream_t) {});
  });
  xfbench::add_case("GpuFault/3_illegal_address", [](benchmark::State&) {
    xfbench::Stream stream;
    launch_illegal_write(stream);
  });
  xfbench::add_case("GpuFault/4_after", [](benchmark::State& s) {
    xfbench::Stream stream;
    xfbench::time_gpu(s, stream, [](cudaStream_t) {});
  });
}

}  // namespace

XFBENCH_PLUGIN("gpu_fault", "1.0.0", "GPU cases that fail on purpose", register_cases)
