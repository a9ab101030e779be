#include "cpu_burn.hpp"

#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <thread>

#include "cpu_report.hpp"
#include "cpu_topology.hpp"
#include "start_gate.hpp"
#include "xfbench/error.hpp"

namespace xfbench::burn {
namespace {

constexpr unsigned kFaultBit = 22;  // the top mantissa bit: the value moves by a third or more

double now() { return host_seconds(); }

double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

// A core that cannot burn (its thread cannot be pinned there): it says why, the others burn on.
struct NotRun {
  std::string why;
};

// Values of `a` whose bits differ from `b`'s.
std::uint64_t differences(const std::vector<float>& a, const std::vector<float>& b) {
  if (std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0) return 0;
  std::uint64_t n = 0;
  for (std::size_t i = 0; i < a.size(); ++i) n += std::memcmp(&a[i], &b[i], sizeof(float)) != 0;
  return n;
}

void flip_bit(float& v, unsigned bit) {
  std::uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  bits ^= 1u << bit;
  std::memcpy(&v, &bits, sizeof bits);
}

// What a core's thread shares with the progress line.
struct LiveCore {
  std::atomic<bool> burning{false}, done{false};
  std::atomic<double> gflops{0};  // its last window's
  std::atomic<std::uint64_t> errors{0};
};

class CoreBurn {
 public:
  // `between_windows` (may be empty) runs as the burn starts and after each window, outside
  // the windows' time.
  CoreBurn(const CpuBurnConfig& c, CpuIsa isa, const std::vector<float>& reference, CoreResult& r,
           LiveCore& live, StartGate& gate, std::function<void()> between_windows = {})
      : c_(c),
        isa_(isa),
        reference_(reference),
        r_(r),
        live_(live),
        gate_(gate),
        between_windows_(std::move(between_windows)) {}
  void run();

 private:
  void pin();
  void burn(double start);
  bool faulted(std::uint64_t window) const {
    return std::any_of(c_.faults.begin(), c_.faults.end(),
                       [&](const CpuFault& f) { return f.cpu == r_.cpu && f.window == window; });
  }

  const CpuBurnConfig& c_;
  CpuIsa isa_;
  const std::vector<float>& reference_;
  CoreResult& r_;
  LiveCore& live_;
  StartGate& gate_;
  std::function<void()> between_windows_;
  std::vector<float> first_;
};

void CoreBurn::run() {
  bool at_gate = true;
  try {
    pin();
    first_.resize(chunk_values(isa_));
    run_chunk(isa_, c_.chunk_steps, first_.data());
    r_.ref_errors = differences(first_, reference_);
    live_.errors = r_.ref_errors;
    at_gate = false;
    const double start = gate_.arrive();
    live_.burning = true;
    burn(start);
  } catch (const NotRun& e) {
    r_.not_run = e.why;
  } catch (const std::exception& e) {
    r_.not_run = e.what();
  }
  if (at_gate) gate_.leave();
  live_.burning = false;
  live_.done = true;
}

void CoreBurn::pin() {
  const int cpu = r_.cpu;
  cpu_set_t* set = CPU_ALLOC(cpu + 1);
  const std::size_t bytes = CPU_ALLOC_SIZE(cpu + 1);
  CPU_ZERO_S(bytes, set);
  CPU_SET_S(cpu, bytes, set);
  const int rc = pthread_setaffinity_np(pthread_self(), bytes, set);
  CPU_FREE(set);
  if (rc != 0) throw NotRun{std::string("cannot pin a thread to it: ") + std::strerror(rc)};
  const int on = sched_getcpu();
  if (on != cpu) throw NotRun{"pinned, yet its thread runs on core " + std::to_string(on)};
}

// Windows of chunks until the deadline, each chunk compared with the first. A window is timed
// from after its clock probe to after its last chunk: the chunks' time only.
void CoreBurn::burn(double start) {
  const double deadline = start + c_.seconds;
  std::vector<float> out(first_.size());
  if (between_windows_) between_windows_();
  for (std::uint64_t w = 0;; ++w) {
    CpuWindow win;
    win.clock_mhz = probe_clock_mhz(isa_);
    const double t0 = now(), cpu0 = thread_cpu_seconds();
    double t = t0;
    do {
      run_chunk(isa_, c_.chunk_steps, out.data());
      if (win.chunks == 0 && faulted(w)) flip_bit(out[0], kFaultBit);
      win.mismatches += differences(out, first_);
      ++win.chunks;
      t = now();
    } while (t < deadline && t - t0 < c_.window_seconds);
    win.seconds = t - t0;
    win.cpu_seconds = thread_cpu_seconds() - cpu0;
    r_.windows.push_back(win);
    r_.ran_on.push_back(sched_getcpu());
    live_.gflops = double(win.chunks) * r_.flops_per_chunk / std::max(win.seconds, 1e-9) / 1e9;
    live_.errors += win.mismatches;
    if (between_windows_) between_windows_();
    if (t >= deadline) break;
  }
}

void check(const CpuBurnConfig& c, CpuIsa isa) {
  if (c.cores.empty()) XF_THROW(InvalidArgument, "a CPU burn needs at least one core");
  if (!(c.seconds > 0) || !(c.window_seconds > 0) || c.chunk_steps == 0)
    XF_THROW(InvalidArgument, "a CPU burn needs positive seconds, windows and chunks");
  if (!cpu_has(isa)) XF_THROW(InvalidArgument, "this CPU cannot run " + isa_name(isa));
  for (const CpuFault& f : c.faults) {
    if (!std::count(c.cores.begin(), c.cores.end(), f.cpu))
      XF_THROW(InvalidArgument, "fault on core " + std::to_string(f.cpu) + ", which is not burned");
  }
}

// The calling thread's affinity, put back when it has burned a core.
class KeepAffinity {
 public:
  KeepAffinity() {
    for (int size = 1024; size <= 2 * kMaxCpu && !ok_; size *= 2) {
      if (set_) CPU_FREE(set_);
      set_ = CPU_ALLOC(size);
      bytes_ = CPU_ALLOC_SIZE(size);
      ok_ = pthread_getaffinity_np(pthread_self(), bytes_, set_) == 0;
    }
  }
  ~KeepAffinity() {
    if (ok_) pthread_setaffinity_np(pthread_self(), bytes_, set_);
    CPU_FREE(set_);
  }
  KeepAffinity(const KeepAffinity&) = delete;
  KeepAffinity& operator=(const KeepAffinity&) = delete;

 private:
  cpu_set_t* set_ = nullptr;
  std::size_t bytes_ = 0;
  bool ok_ = false;
};

// The host's sensors as the burn starts, about every window while it runs, and as it ends, with a
// progress line every c.progress_seconds: every core's last window and the sensors since the
// last line.
class Sampler {
 public:
  Sampler(const CpuBurnConfig& c, CpuIsa isa, const SysFs& sys, const HostSensors& found,
          const std::deque<LiveCore>& live, StartGate& gate)
      : c_(c), isa_(isa), sys_(sys), found_(found), live_(live), gate_(gate) {}
  void tick() {
    const double start = gate_.start(), t = now();
    if (start == 0) return;
    if (!samples_.empty() && t < samples_.back().t + 0.9 * c_.window_seconds) return;
    samples_.push_back(sample_sensors(sys_, found_, t));
    if (c_.progress_seconds <= 0 || t - samples_[last_line_].t < c_.progress_seconds) return;
    if (t >= start + c_.seconds) return;  // the burn's last window: the final lines follow
    std::fprintf(stderr, "%s\n",
                 cpu_progress_line(c_.name, isa_name(isa_), t - start, c_.seconds, view()).c_str());
    last_line_ = samples_.size() - 1;
  }
  SensorSummary finish() {
    samples_.push_back(sample_sensors(sys_, found_, now()));
    return summarize_sensors(found_, samples_);
  }

 private:
  CpuLive view() const {
    CpuLive v;
    for (const LiveCore& l : live_) {
      if (!l.burning) continue;
      ++v.cores_burning;
      const double g = l.gflops;
      v.gflops += g;
      v.gflops_min = v.cores_burning == 1 ? g : std::min(v.gflops_min, g);
      v.errors += l.errors;
    }
    const SensorSummary s = summarize_sensors(found_, {samples_[last_line_], samples_.back()});
    v.package_temp_c = s.package_temp_max;
    v.mhz = s.mhz_median;
    v.power_w = s.power_w;
    return v;
  }

  const CpuBurnConfig& c_;
  CpuIsa isa_;
  const SysFs& sys_;
  const HostSensors& found_;
  const std::deque<LiveCore>& live_;
  StartGate& gate_;
  std::vector<SensorSample> samples_;
  std::size_t last_line_ = 0;
};

}  // namespace

CpuBurnReport run_cpu_burn(const CpuBurnConfig& c) {
  const CpuIsa isa = c.isa.value_or(detect_cpu_isa());
  check(c, isa);
  const SysFs sys(c.sys_root);
  CpuBurnReport report;
  report.isa = isa;
  report.peak_flop_per_cycle = assumed_flop_per_cycle(isa);
  report.seconds = c.seconds;
  for (int cpu : c.cores) {
    CoreResult r;
    r.cpu = cpu;
    r.socket = package_of(sys, cpu);
    report.sockets_known = report.sockets_known && r.socket >= 0;
    r.socket = std::max(r.socket, 0);
    r.flops_per_chunk = chunk_flops(isa, c.chunk_steps);
    report.cores.push_back(r);
  }
  std::vector<float> reference(chunk_values(isa));
  reference_chunk(isa, c.chunk_steps, reference.data());
  const HostSensors found = find_sensors(sys, c.cores);

  // The calling thread burns the first core itself and reads the sensors between its windows:
  // Google Benchmark judges whether a run was long enough by the calling thread's CPU time.
  const std::size_t n = c.cores.size();
  std::deque<LiveCore> live(n);
  StartGate gate{int(n)};
  std::vector<std::thread> threads;
  for (std::size_t i = 1; i < n; ++i) {
    threads.emplace_back(
        [&, i] { CoreBurn(c, isa, reference, report.cores[i], live[i], gate).run(); });
  }
  Sampler sampler(c, isa, sys, found, live, gate);
  {
    KeepAffinity keep;
    CoreBurn(c, isa, reference, report.cores[0], live[0], gate, [&] { sampler.tick(); }).run();
  }
  auto all_done = [&] {
    return std::all_of(live.begin(), live.end(), [](const LiveCore& l) { return l.done.load(); });
  };
  while (!all_done()) {  // the first core could not burn, or the others still end their windows
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    sampler.tick();
  }
  for (std::thread& t : threads) t.join();
  report.sensors = sampler.finish();
  return report;
}

}  // namespace xfbench::burn
