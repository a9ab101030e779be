// The Memcpy family: host<->device (pinned and pageable) and device<->device copies through the
// copy engines (cudaMemcpyAsync) and through SMs (a copy kernel on mapped host or device memory).
#include <cstdlib>
#include <cstring>
#include <memory>

#include "copy_kernels.hpp"
#include "transfer_cases.hpp"
#include "xfbench/topology.hpp"
#include "xfbench/xfbench.hpp"

namespace xfbench::transfer {
namespace {

constexpr std::uint32_t kSeed = 7;

struct MemcpyCase {
  Direction dir;
  HostMemory mem;
  Engine engine;
  std::size_t bytes;
};

// Pageable host memory: plain malloc'ed pages (page-aligned), owned.
struct PageableBuffer {
  explicit PageableBuffer(std::size_t bytes)
      : ptr(std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096)) {
    if (!ptr) XF_THROW(Unsupported, "cannot allocate " + format_size(bytes) + " of host memory");
  }
  ~PageableBuffer() { std::free(ptr); }
  PageableBuffer(const PageableBuffer&) = delete;
  PageableBuffer& operator=(const PageableBuffer&) = delete;
  void* ptr;
};

// A kernel can reach pageable memory only where the GPU uses the host's page tables (ATS, e.g.
// Grace Hopper); x86 HMM would migrate the pages to the GPU instead, which is no host copy.
void require_sm_access_to_pageable(int device) {
  int direct = 0;
  XF_CUDA_CHECK(
      cudaDeviceGetAttribute(&direct, cudaDevAttrPageableMemoryAccessUsesHostPageTables, device));
  if (!direct) {
    XF_THROW(LeftOut,
             "need ATS (a GPU that addresses pageable host memory in place) for SM copies from "
             "pageable memory");
  }
}

void run_memcpy(benchmark::State& state, const MemcpyCase& c) {
  const int dev = selected_device();
  const std::size_t words = c.bytes / 4;
  if (c.mem == HostMemory::pageable && c.engine == Engine::sm) require_sm_access_to_pageable(dev);
  require_free_memory(c.dir == Direction::d2d ? 2 * c.bytes : c.bytes);

  Stream stream;
  DeviceMemory device_a(c.bytes), device_b;
  std::unique_ptr<PinnedBuffer<std::uint32_t>> pinned;
  std::unique_ptr<PageableBuffer> pageable;
  void* host = nullptr;
  if (c.mem == HostMemory::pinned) {
    pinned = std::make_unique<PinnedBuffer<std::uint32_t>>(words);
    host = pinned->data();
  } else if (c.mem == HostMemory::pageable) {
    pageable = std::make_unique<PageableBuffer>(c.bytes);
    host = pageable->ptr;
  } else {
    device_b = DeviceMemory(c.bytes);
  }
  void* src = nullptr;
  void* dst = nullptr;
  switch (c.dir) {
    case Direction::h2d:
      src = host, dst = device_a.get();
      break;
    case Direction::d2h:
      src = device_a.get(), dst = host;
      break;
    case Direction::d2d:
      src = device_a.get(), dst = device_b.get();
      break;
  }
  const bool dst_on_host = c.dir == Direction::d2h;
  if (c.dir == Direction::h2d) {
    fill_pattern_host(src, words, kSeed);
  } else {
    fill_pattern(src, words, kSeed, stream);
  }

  auto copy = [&](cudaStream_t s) {
    if (c.engine == Engine::ce) {
      XF_CUDA_CHECK(cudaMemcpyAsync(dst, src, c.bytes, cudaMemcpyDefault, s));
    } else {
      sm_copy(dst, src, c.bytes, s);
    }
  };

  if (should_validate()) {
    if (dst_on_host) {
      stream.sync();
      std::memset(dst, 0xFF, c.bytes);
    } else {
      poison(dst, c.bytes, stream);
    }
    copy(stream);
    stream.sync();
    std::size_t bad = dst_on_host ? count_pattern_mismatches_host(dst, words, kSeed)
                                  : count_pattern_mismatches(dst, words, kSeed, stream);
    if (bad) {
      XF_THROW(ValidationError, std::to_string(bad) + " of " + std::to_string(words) +
                                    " words differ from the source after the copy");
    }
  }

  TimerOptions options;
  // Pageable copies stage through the driver's pinned buffers on the host: not capturable.
  options.use_graph = c.mem != HostMemory::pageable;
  Timing t = time_gpu(state, stream, copy, options);
  set_counters(state, t, {0, memcpy_bytes_counted(c.dir, c.bytes), Dtype::fp32});
  if (c.dir == Direction::d2d) {
    add_label(state, "GB/s counts read + write; pct_peak of HBM " +
                         std::to_string(int(device_peaks().mem_gbs)) + " GB/s");
  } else {
    PcieLink link = pcie_link(dev);
    state.counters["pct_peak"] = percent_of(state.counters["GB/s"], link.peak_gbs());
    add_label(state, "GB/s counts bytes once; pct_peak of " + link.describe());
  }
}

}  // namespace

void require_free_memory(std::size_t bytes) {
  std::size_t free_b = 0, total_b = 0;
  XF_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  if (double(bytes) > 0.9 * double(free_b)) {
    int dev = 0;
    cudaGetDevice(&dev);
    XF_THROW(Unsupported, "needs " + std::to_string(bytes >> 20) + " MiB on GPU " +
                              std::to_string(dev) + ", " + std::to_string(free_b >> 20) +
                              " MiB free");
  }
}

void register_memcpy_cases(const Sizes& sizes) {
  struct Kind {
    Direction dir;
    HostMemory mem;
  };
  const Kind kinds[] = {{Direction::h2d, HostMemory::pinned},
                        {Direction::h2d, HostMemory::pageable},
                        {Direction::d2h, HostMemory::pinned},
                        {Direction::d2h, HostMemory::pageable},
                        {Direction::d2d, HostMemory::device}};
  for (const Kind& k : kinds) {
    for (Engine e : {Engine::ce, Engine::sm}) {
      for (std::size_t b : sizes.all) {
        MemcpyCase c{k.dir, k.mem, e, b};
        // Pageable copies are staged by the host CPU: they measure its memcpy and memory, and
        // repeat only within 6-9% (H100 VM, 5 repetitions), so a filter selects them; so it does
        // the SM copies, which the default suite leaves to the copy engines' headline.
        const bool core = k.mem != HostMemory::pageable && e == Engine::ce;
        const Suite suite = core ? sizes.suite(b) : Suite::extended;
        add_case(
            memcpy_name(k.dir, k.mem, e, b), [c](benchmark::State& s) { run_memcpy(s, c); },
            Needs::gpu, suite);
      }
    }
  }
}

}  // namespace xfbench::transfer
