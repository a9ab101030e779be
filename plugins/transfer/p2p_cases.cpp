// The P2P family (cuda-samples' p2pBandwidthLatencyTest as cases): for each ordered GPU pair,
// unidirectional and bidirectional bandwidth and small-copy latency, with peer access enabled or
// disabled, through copy engines (cudaMemcpyPeerAsync) or SMs (a kernel writing peer memory).
#include <chrono>
#include <memory>

#include "copy_kernels.hpp"
#include "transfer_cases.hpp"
#include "xfbench/topology.hpp"
#include "xfbench/xfbench.hpp"

namespace xfbench::transfer {
namespace {

constexpr std::size_t kLatencyBytes = 4;  // one int, as p2pBandwidthLatencyTest

struct P2PCase {
  bool latency;
  P2PMode mode;
  bool peer;
  Engine engine;
  int src, dst;
  std::size_t bytes;
};

// Sets peer access between two GPUs (both ways) for the case and restores what was there before:
// NCCL and other cases may rely on access being enabled.
class PeerAccessScope {
 public:
  PeerAccessScope(int a, int b, bool enable) {
    OnDevice guard;
    for (auto [from, to] : {std::pair{a, b}, std::pair{b, a}}) {
      XF_CUDA_CHECK(cudaSetDevice(from));
      cudaError_t e = enable ? cudaDeviceEnablePeerAccess(to, 0) : cudaDeviceDisablePeerAccess(to);
      if (e == cudaSuccess) {
        changed_.emplace_back(from, to);
      } else if (e == cudaErrorPeerAccessAlreadyEnabled || e == cudaErrorPeerAccessNotEnabled) {
        cudaGetLastError();
      } else {
        XF_CUDA_CHECK(e);
      }
    }
    enabled_ = enable;
  }
  ~PeerAccessScope() {
    OnDevice guard;
    for (auto [from, to] : changed_) {
      cudaSetDevice(from);
      enabled_ ? cudaDeviceDisablePeerAccess(to) : cudaDeviceEnablePeerAccess(to, 0);
      cudaGetLastError();
    }
  }
  PeerAccessScope(const PeerAccessScope&) = delete;
  PeerAccessScope& operator=(const PeerAccessScope&) = delete;

 private:
  std::vector<std::pair<int, int>> changed_;
  bool enabled_ = false;
};

// One direction of a case: `bytes` from GPU `from` to GPU `to`, issued by `issuer`'s streams.
struct Leg {
  int from = 0, to = 0, issuer = 0;
  std::uint32_t seed = 0;
  DeviceMemory src, dst;
  std::vector<Stream> streams;
  std::vector<Event> joins;  // recorded on streams[i] (all but the case's first stream)
};

void make_leg(Leg& leg, int from, int to, bool pull, int streams, std::size_t bytes,
              std::uint32_t seed) {
  leg.from = from, leg.to = to, leg.issuer = pull ? to : from, leg.seed = seed;
  XF_CUDA_CHECK(cudaSetDevice(to));
  require_free_memory(bytes);
  leg.dst = DeviceMemory(bytes);
  XF_CUDA_CHECK(cudaSetDevice(from));
  require_free_memory(bytes);
  leg.src = DeviceMemory(bytes);
  XF_CUDA_CHECK(cudaSetDevice(leg.issuer));
  for (int i = 0; i < streams; ++i) {
    leg.streams.emplace_back();
    leg.joins.emplace_back();
  }
  XF_CUDA_CHECK(cudaSetDevice(from));
  Stream fill;
  fill_pattern(leg.src.get(), bytes / 4, seed, fill);
  fill.sync();
}

// Issues the leg's copy, split evenly over its streams.
void issue(Leg& leg, const P2PCase& c, const P2POptions& o) {
  const std::size_t n = leg.streams.size();
  const std::size_t per = (c.bytes / 4 + n - 1) / n * 4;
  XF_CUDA_CHECK(cudaSetDevice(leg.issuer));
  for (std::size_t i = 0; i < n; ++i) {
    std::size_t off = std::min(c.bytes, i * per), len = std::min(c.bytes - off, per);
    if (len == 0) continue;
    char* d = static_cast<char*>(leg.dst.get()) + off;
    const char* s = static_cast<const char*>(leg.src.get()) + off;
    if (c.engine == Engine::ce) {
      XF_CUDA_CHECK(cudaMemcpyPeerAsync(d, leg.to, s, leg.from, len, leg.streams[i]));
    } else {
      sm_copy(d, s, len, leg.streams[i], o.blocks_per_sm);
    }
  }
}

std::string link_label(int a, int b) {
  int links = nvlink_count(a, b);
  std::string l = links > 0    ? "NV" + std::to_string(links)
                  : links == 0 ? std::string("no NVLink (PCIe)")
                               : std::string("NVLink unknown");
  return l + ", peer access " + (can_access_peer(a, b) ? "possible" : "impossible");
}

void run_p2p(benchmark::State& state, const P2PCase& c, const P2POptions& o) {
  const int n = device_count();
  if (n < 2) {
    XF_THROW(LeftOut, "need 2 GPUs, this machine has " + std::to_string(n));
  }
  if (c.src >= n || c.dst >= n) {
    XF_THROW(Unsupported, "GPU " + std::to_string(std::max(c.src, c.dst)) + " is not visible (" +
                              std::to_string(n) + " GPUs)");
  }
  if (c.peer && !(can_access_peer(c.src, c.dst) && can_access_peer(c.dst, c.src))) {
    XF_THROW(Unsupported, "GPUs " + std::to_string(c.src) + " and " + std::to_string(c.dst) +
                              " cannot access each other's memory (cudaDeviceCanAccessPeer)");
  }
  if (!c.peer && c.engine == Engine::sm) {
    XF_THROW(Unsupported,
             "an SM copy between GPUs needs peer access; without it copies are staged through "
             "host memory by the driver (see nopeer/ce), as in p2pBandwidthLatencyTest");
  }
  OnDevice guard;
  PeerAccessScope access(c.src, c.dst, c.peer);
  const int streams = c.engine == Engine::ce && !c.latency ? std::max(1, o.ce_streams) : 1;

  std::vector<std::unique_ptr<Leg>> legs;
  legs.push_back(std::make_unique<Leg>());
  make_leg(*legs[0], c.src, c.dst, o.pull, streams, c.bytes, 1);
  if (c.mode == P2PMode::bi) {
    legs.push_back(std::make_unique<Leg>());
    make_leg(*legs[1], c.dst, c.src, o.pull, streams, c.bytes, 2);
  }
  // The case's stream is the first leg's first; every other stream forks from it and joins it.
  cudaStream_t main = legs[0]->streams[0];
  const int main_device = legs[0]->issuer;
  XF_CUDA_CHECK(cudaSetDevice(main_device));
  Event fork;
  auto launch = [&](cudaStream_t s) {
    fork.record(s);
    for (auto& leg : legs) {
      for (std::size_t i = 0; i < leg->streams.size(); ++i) {
        if (leg->streams[i].get() != s)
          XF_CUDA_CHECK(cudaStreamWaitEvent(leg->streams[i], fork.get()));
      }
    }
    for (auto& leg : legs) issue(*leg, c, o);
    for (auto& leg : legs) {
      for (std::size_t i = 0; i < leg->streams.size(); ++i) {
        if (leg->streams[i].get() == s) continue;
        leg->joins[i].record(leg->streams[i]);
        XF_CUDA_CHECK(cudaStreamWaitEvent(s, leg->joins[i].get()));
      }
    }
    XF_CUDA_CHECK(cudaSetDevice(main_device));
  };

  if (should_validate()) {
    for (auto& leg : legs) {
      XF_CUDA_CHECK(cudaSetDevice(leg->to));
      Stream s;
      poison(leg->dst.get(), c.bytes, s);
      s.sync();
    }
    XF_CUDA_CHECK(cudaSetDevice(main_device));
    launch(main);
    XF_CUDA_CHECK(cudaStreamSynchronize(main));
    for (auto& leg : legs) {
      XF_CUDA_CHECK(cudaSetDevice(leg->to));
      Stream s;
      std::size_t bad = count_pattern_mismatches(leg->dst.get(), c.bytes / 4, leg->seed, s);
      if (bad) {
        XF_THROW(ValidationError, std::to_string(bad) + " of " + std::to_string(c.bytes / 4) +
                                      " words wrong on GPU " + std::to_string(leg->to) +
                                      " after the copy from GPU " + std::to_string(leg->from));
      }
    }
    XF_CUDA_CHECK(cudaSetDevice(main_device));
  }

  Timing t = time_gpu(state, main, launch);
  if (c.latency) {
    state.counters["latency_us"] = t.seconds * 1e6;
  } else {
    state.counters["GB/s"] = gbps(p2p_bytes_counted(c.mode, c.bytes), t.seconds);
  }
  std::string how =
      std::string(o.pull ? "issued by the destination GPU" : "issued by the source GPU");
  if (streams > 1) how += ", " + std::to_string(streams) + " streams per direction";
  add_label(state, link_label(c.src, c.dst) + "; " + how +
                       (c.mode == P2PMode::bi ? "; GB/s counts both directions" : ""));
}

}  // namespace

void register_p2p_cases(const std::vector<int>& gpus, const Sizes& sizes,
                        const P2POptions& options) {
  std::vector<std::pair<int, int>> pairs;
  for (auto [s, d] : gpu_pairs(int(gpus.size()))) {
    pairs.emplace_back(gpus.size() >= 2 ? gpus[s] : s, gpus.size() >= 2 ? gpus[d] : d);
  }
  for (P2PMode m : {P2PMode::uni, P2PMode::bi}) {
    for (bool peer : {true, false}) {
      for (Engine e : {Engine::ce, Engine::sm}) {
        for (auto [s, d] : pairs) {
          for (std::size_t b : sizes.all) {
            P2PCase c{false, m, peer, e, s, d, b};
            add_case(
                p2p_name(m, peer, e, s, d, b),
                [c, options](benchmark::State& st) { run_p2p(st, c, options); }, Needs::gpu,
                sizes.suite(b));
          }
        }
      }
    }
  }
  for (bool peer : {true, false}) {
    for (Engine e : {Engine::ce, Engine::sm}) {
      for (auto [s, d] : pairs) {
        P2PCase c{true, P2PMode::uni, peer, e, s, d, kLatencyBytes};
        add_case(p2p_latency_name(peer, e, s, d),
                 [c, options](benchmark::State& st) { run_p2p(st, c, options); });
      }
    }
  }
}

void register_topology_case(const std::vector<int>& gpus) {
  add_case("P2P/topology", [gpus](benchmark::State& state) {
    auto start = std::chrono::steady_clock::now();
    std::vector<int> devs = gpus;
    if (devs.empty()) {
      for (int i = 0; i < device_count(); ++i) devs.push_back(i);
    }
    std::string label;
    for (int a : devs) {
      PcieLink p = pcie_link(a);
      state.counters["pcie_gen_" + std::to_string(a)] = p.max_gen;
      state.counters["pcie_width_" + std::to_string(a)] = p.max_width;
      label += (label.empty() ? "" : "; ") + std::string("GPU ") + std::to_string(a) + ": " +
               p.describe();
      for (int b : devs) {
        if (a == b) continue;
        std::string pair = std::to_string(a) + "_" + std::to_string(b);
        state.counters["peer_" + pair] = can_access_peer(a, b) ? 1 : 0;
        state.counters["nvlinks_" + pair] = nvlink_count(a, b);
        if (a < b)
          label += "; " + std::to_string(a) + "<->" + std::to_string(b) + ": " + link_label(a, b);
      }
    }
    state.counters["gpus"] = double(devs.size());
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (auto _ : state) state.SetIterationTime(seconds);
    add_label(state, label);
  });
}

}  // namespace xfbench::transfer
