#include "burn_engine.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <memory>
#include <thread>

#include "burn_kernels.hpp"
#include "burn_report.hpp"
#include "kernels/comm/rank_threads.hpp"
#include "start_gate.hpp"
#include "xfbench/device.hpp"
#include "xfbench/error.hpp"
#include "xfbench/memory.hpp"

namespace xfbench::burn {
namespace {

namespace k = xfbench::kernels;

constexpr std::uint64_t kMaxProductsPerWindow = 20000;  // tiny test products: bounded launches
constexpr double kMonitorSeconds = 0.25;                // Xid polling and progress checks
constexpr std::uint64_t kSeedA = 1, kSeedB = 2;

// Not enough memory or the dtype missing: the slot says why and the others burn on.
struct NotRun {
  std::string why;
  bool unsupported = false;
};

std::string gb(double bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f GB", bytes / 1e9);
  return text;
}

// What a slot's thread shares with the progress line.
struct Live {
  std::atomic<bool> burning{false}, done{false};
  std::atomic<double> tflops{0};
  std::atomic<std::uint64_t> errors{0};
};

// A stream at the device's highest or lowest scheduling priority.
class PriorityStream {
 public:
  explicit PriorityStream(bool highest) {
    int least = 0, greatest = 0;
    XF_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    XF_CUDA_CHECK(
        cudaStreamCreateWithPriority(&s_, cudaStreamNonBlocking, highest ? greatest : least));
  }
  ~PriorityStream() {
    if (s_) cudaStreamDestroy(s_);
  }
  PriorityStream(const PriorityStream&) = delete;
  PriorityStream& operator=(const PriorityStream&) = delete;
  operator cudaStream_t() const { return s_; }
  void sync() const { XF_CUDA_CHECK(cudaStreamSynchronize(s_)); }

 private:
  cudaStream_t s_ = nullptr;
};

// One slot's GPU: the plan, the inputs, the result buffers (the first product in buffer 0) and
// the mismatch counter, all on the slot's device. Products run on `stream`; each is compared on
// `check` while the next one runs (at a lower priority, so comparison blocks fill the SMs a
// product's last wave leaves idle rather than delaying the products). A product waits until the
// comparison of the one before it in its buffer has read that buffer (`compared`).
struct SlotGpu {
  k::GemmDesc desc;
  std::unique_ptr<k::Gemm> gemm;
  PriorityStream stream{true}, check{false};
  Event written;                // the latest product, flipped bits included
  std::vector<Event> compared;  // per result buffer: its latest comparison
  DeviceMemory a, b, results;
  DeviceBuffer<unsigned long long> mismatches{1};
  PinnedBuffer<unsigned long long> seen{2};  // the counter after each of two queued windows
  std::size_t elements = 0, out_bytes = 0, buffers = 0;
  void* result(std::size_t i) const {
    return static_cast<char*>(results.get()) + i * elements * out_bytes;
  }
};

class SlotBurn {
 public:
  SlotBurn(const BurnConfig& c, int slot, SlotResult& r, Live& live, StartGate& gate)
      : c_(c), slot_(slot), r_(r), live_(live), gate_(gate) {}
  void run();

 private:
  void set_up();
  void allocate(std::size_t free_bytes);
  void compute(std::uint64_t product, std::size_t buffer);
  double first_product();  // seconds it took
  void check_reference();
  void burn(double start, double first_seconds);

  const BurnConfig& c_;
  int slot_;
  SlotResult& r_;
  Live& live_;
  StartGate& gate_;
  std::unique_ptr<SlotGpu> g_;
};

void SlotBurn::run() {
  bool at_gate = true;
  try {
    set_up();
    const double first_seconds = first_product();
    check_reference();
    live_.errors = r_.reference_errors;
    at_gate = false;
    const double start = gate_.arrive();
    live_.burning = true;
    burn(start, first_seconds);
  } catch (const NotRun& e) {
    r_.not_run = e.why;
    r_.unsupported = e.unsupported;
    if (!e.unsupported) {  // a GPU that lacks the dtype is skipped by the case, in one line
      std::fprintf(stderr, "xfbench: %s gpu%d: %s%s\n", c_.name.c_str(), r_.device,
                   verdict(r_).c_str(), c_.devices.size() > 1 ? "; the other GPUs burn on" : "");
    }
  } catch (const std::exception& e) {
    if (at_gate) r_.not_run = e.what();  // never burned: nothing to judge it by
    if (!at_gate) r_.failure = e.what();
    std::fprintf(stderr, "xfbench: %s gpu%d: %s\n", c_.name.c_str(), r_.device,
                 verdict(r_).c_str());
  }
  if (at_gate) gate_.leave();
  g_.reset();  // frees the memory while the other slots may still burn
  live_.burning = false;
  live_.done = true;
}

void SlotBurn::set_up() {
  XF_CUDA_CHECK(cudaSetDevice(r_.device));
  std::size_t free_bytes = 0, total = 0;
  XF_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total));
  for (int s : c_.starved_slots)
    if (s == slot_) free_bytes = 0;
  g_ = std::make_unique<SlotGpu>();
  SlotGpu& g = *g_;
  g.desc.precision = k::precision_of(c_.dtype);
  g.desc.trans_b = c_.shape.trans_b;
  g.desc.m = c_.shape.m, g.desc.n = c_.shape.n, g.desc.k = c_.shape.k;
  k::GemmOptions options;
  options.private_workspace = true;  // slots on one device (tests) must not share it
  try {
    g.gemm = std::make_unique<k::Gemm>(g.desc, options);
  } catch (const Unsupported& e) {
    throw NotRun{"unsupported: " + e.message(), true};
  }
  g.elements = std::size_t(c_.shape.m * c_.shape.n);
  g.out_bytes = k::elem_size(g.desc.out_type());
  r_.flops_per_product = k::gemm_flops(g.desc);
  allocate(free_bytes);
  const Dtype fill = c_.dtype;
  const InputRange in = c_.inputs;
  fill_uniform(g.a.get(), k::a_elements(g.desc), fill, kSeedA, in.lo, in.hi, g.stream);
  fill_uniform(g.b.get(), k::b_elements(g.desc), fill, kSeedB, in.lo, in.hi, g.stream);
  poison(g.results.get(), g.results.bytes(), g.stream);
  XF_CUDA_CHECK(cudaMemsetAsync(g.mismatches.data(), 0, sizeof(unsigned long long), g.stream));
  if (c_.search) {
    k::GemmOperands ops{g.a.get(), g.b.get(), g.result(1)};
    g.gemm->tune(g.stream, ops);
  }
  r_.algo = g.gemm->algo_info().label();
}

// The inputs, then as many result buffers as mem_pct of the free memory holds (fewer if the
// allocation fails: the driver keeps some memory that cudaMemGetInfo counts as free).
void SlotBurn::allocate(std::size_t free_bytes) {
  SlotGpu& g = *g_;
  const std::size_t in = k::elem_size(k::input_type(g.desc.precision));
  const double inputs = double(k::a_elements(g.desc) + k::b_elements(g.desc)) * double(in);
  const double product = double(g.elements * g.out_bytes);
  const double budget = double(free_bytes) * c_.mem_pct / 100.0 - inputs;
  std::size_t buffers = budget > 0 ? std::size_t(budget / product) : 0;
  if (c_.max_buffers > 0) buffers = std::min(buffers, c_.max_buffers);
  auto short_of_memory = [&] {
    char why[256];
    std::snprintf(why, sizeof why,
                  "out of memory: %.0f%% of the %s free holds the inputs (%s) but not two "
                  "%lldx%lld result buffers of %s",
                  c_.mem_pct, gb(double(free_bytes)).c_str(), gb(inputs).c_str(),
                  (long long)c_.shape.m, (long long)c_.shape.n, gb(product).c_str());
    return NotRun{why};
  };
  if (buffers < 2) throw short_of_memory();
  g.a = DeviceMemory(k::a_elements(g.desc) * in);
  g.b = DeviceMemory(k::b_elements(g.desc) * in);
  while (buffers >= 2) {
    try {
      g.results = DeviceMemory(buffers * g.elements * g.out_bytes);
      break;
    } catch (const CudaError& e) {
      if (e.code() != cudaErrorMemoryAllocation) throw;
      buffers = buffers * 9 / 10;
    }
  }
  if (buffers < 2) throw short_of_memory();
  g.buffers = r_.buffers = buffers;
  g.compared = std::vector<Event>(buffers);
  r_.mem_bytes = inputs + double(buffers) * product;
}

// Product `product` into result buffer `buffer`, then the faults a test injects into it.
void SlotBurn::compute(std::uint64_t product, std::size_t buffer) {
  SlotGpu& g = *g_;
  k::GemmOperands ops{g.a.get(), g.b.get(), g.result(buffer)};
  g.gemm->run(g.stream, ops);
  for (const Fault& f : c_.faults) {
    if (f.slot != slot_ || !(f.product == product || (f.every_product && product >= f.product)))
      continue;
    if (f.element >= g.elements) XF_THROW(InvalidArgument, "fault element beyond the product");
    flip_bit(g.stream, g.result(buffer), f.element, g.out_bytes, f.bit);
  }
}

double SlotBurn::first_product() {
  SlotGpu& g = *g_;
  Event start, stop;
  start.record(g.stream);
  compute(0, 0);
  stop.record(g.stream);
  return stop.elapsed_ms_since(start) / 1e3;
}

// Sampled elements of the first product against a float64 product of the same stored inputs.
void SlotBurn::check_reference() {
  SlotGpu& g = *g_;
  const std::vector<k::GemmSample> positions = reference_positions(c_.shape, c_.reference_samples);
  const int n = int(positions.size());
  DeviceBuffer<k::GemmSample> where(positions.size());
  DeviceBuffer<double> want(positions.size()), got(positions.size());
  XF_CUDA_CHECK(cudaMemcpyAsync(where.data(), positions.data(), where.bytes(),
                                cudaMemcpyHostToDevice, g.stream));
  k::gemm_reference_at(g.stream, g.desc, g.a.get(), g.b.get(), where.data(), n, want.data());
  k::gemm_gather_at(g.stream, g.desc, g.result(0), where.data(), n, got.data());
  std::vector<double> ref(positions.size()), out(positions.size());
  XF_CUDA_CHECK(
      cudaMemcpyAsync(ref.data(), want.data(), want.bytes(), cudaMemcpyDeviceToHost, g.stream));
  XF_CUDA_CHECK(
      cudaMemcpyAsync(out.data(), got.data(), got.bytes(), cudaMemcpyDeviceToHost, g.stream));
  g.stream.sync();
  double sum = 0;
  for (double v : ref) sum += v * v;
  const double rms = std::sqrt(sum / std::max(1, n));
  const double bound = reference_tolerance(c_.dtype) * rms;
  r_.reference_samples = n;
  for (int i = 0; i < n; ++i) {
    const double error = std::fabs(out[i] - ref[i]);
    if (!(error <= bound)) ++r_.reference_errors;  // NaN and Inf count as wrong
    r_.reference_worst =
        std::max(r_.reference_worst, std::isfinite(error) && rms > 0 ? error / rms : HUGE_VAL);
  }
}

// Windows of products until the deadline, one window queued ahead of the one the host waits on
// so the GPU never idles. A window's errors are read when the comparison of its last product is
// done; its time is that of its products on the product stream (a comparison ends inside the next
// product, so timing windows there would move about one product from each window to the one
// before). The last window ends with its comparisons: the windows tile the whole burn.
void SlotBurn::burn(double start, double first_seconds) {
  SlotGpu& g = *g_;
  const double deadline = start + c_.seconds;
  // Of windows w-1 (the start of w), w and w+1 while the host reads window w: products done on
  // the product stream, comparisons and counter copy done on the comparison stream.
  Event products_done[3], compared_done[3];
  std::uint64_t queued[2] = {0, 0};
  std::uint64_t per_window = std::uint64_t(std::clamp(
      c_.window_seconds / std::max(first_seconds, 1e-6), 1.0, double(kMaxProductsPerWindow)));
  double window_estimate = double(per_window) * first_seconds;
  std::uint64_t product = 1;
  std::size_t next = 1;
  auto enqueue = [&](int w) {
    for (std::uint64_t i = 0; i < per_window; ++i, ++product) {
      XF_CUDA_CHECK(cudaStreamWaitEvent(g.stream, g.compared[next].get(), 0));
      compute(product, next);
      g.written.record(g.stream);
      XF_CUDA_CHECK(cudaStreamWaitEvent(g.check, g.written.get(), 0));
      count_mismatches(g.check, g.result(next), g.result(0), g.elements, g.out_bytes,
                       g.mismatches.data());
      g.compared[next].record(g.check);
      next = next + 1 == g.buffers ? 1 : next + 1;
    }
    products_done[w % 3].record(g.stream);
    XF_CUDA_CHECK(cudaMemcpyAsync(g.seen.data() + (w & 1), g.mismatches.data(),
                                  sizeof(unsigned long long), cudaMemcpyDeviceToHost, g.check));
    compared_done[w % 3].record(g.check);
    queued[w & 1] = per_window;
  };
  r_.t0 = host_seconds();
  products_done[2].record(g.stream);  // window 0 starts with its first product
  enqueue(0);
  std::uint64_t counted = 0;
  for (int w = 0;; ++w) {
    const bool more = host_seconds() + 1.5 * window_estimate < deadline;
    if (more) enqueue(w + 1);
    BurnWindow win;
    const Event& end = more ? products_done[w % 3] : compared_done[w % 3];
    XF_CUDA_CHECK(cudaEventSynchronize(compared_done[w % 3].get()));  // the counter copy
    win.seconds = end.elapsed_ms_since(products_done[(w + 2) % 3]) / 1e3;
    win.products = queued[w & 1];
    win.mismatches = g.seen.data()[w & 1] - counted;
    counted += win.mismatches;
    r_.windows.push_back(win);
    const double per_product = std::max(win.seconds, 1e-9) / double(win.products);
    live_.tflops = r_.flops_per_product / per_product / 1e12;
    live_.errors = counted + r_.reference_errors;
    per_window = std::uint64_t(std::clamp(std::round(c_.window_seconds / per_product), 1.0,
                                          double(kMaxProductsPerWindow)));
    window_estimate = double(per_window) * per_product;
    if (!more) break;
  }
  r_.t1 = host_seconds();
}

// SplitMix64: the sample positions are the same on every run and GPU.
std::uint64_t mix(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The progress line's view of every slot: the last window and the telemetry since the last line.
std::vector<LiveSlot> live_view(const std::vector<SlotResult>& slots, const std::deque<Live>& live,
                                std::vector<std::unique_ptr<TelemetrySampler>>& samplers,
                                double since, double now) {
  std::vector<LiveSlot> view;
  for (std::size_t i = 0; i < slots.size(); ++i) {
    LiveSlot v;
    v.device = slots[i].device;
    v.burning = live[i].burning;
    v.tflops = live[i].tflops;
    v.errors = live[i].errors;
    const TelemetryReading t = samplers[i]->read(since, now);
    v.temp_c = t.temp_c, v.sm_mhz = t.sm_mhz, v.power_w = t.power_w;
    view.push_back(v);
  }
  return view;
}

}  // namespace

std::vector<k::GemmSample> reference_positions(const BurnShape& shape, int count) {
  std::vector<k::GemmSample> out;
  for (int i = 0; i < count; ++i) {
    const std::uint64_t z = mix(std::uint64_t(i));
    out.push_back({0, std::int64_t(z % std::uint64_t(shape.m)),
                   std::int64_t((z >> 32) % std::uint64_t(shape.n))});
  }
  return out;
}

BurnReport run_burn(const BurnConfig& c) {
  if (c.devices.empty()) XF_THROW(InvalidArgument, "a burn needs at least one GPU");
  if (c.shape.m <= 0 || c.shape.n <= 0 || c.shape.k <= 0)
    XF_THROW(InvalidArgument, "a burn needs a positive shape");
  check_seconds(c.seconds);
  check_mem_pct(c.mem_pct);
  BurnReport report;
  report.dtype = c.dtype;
  report.shape = c.shape;
  report.inputs = c.inputs;
  report.seconds = c.seconds;
  const std::size_t n = c.devices.size();
  report.slots.resize(n);
  std::deque<Live> live(n);
  std::vector<std::unique_ptr<TelemetrySampler>> samplers;
  std::vector<std::unique_ptr<XidWatcher>> xids;
  for (std::size_t i = 0; i < n; ++i) {
    SlotResult& s = report.slots[i];
    const DeviceInfo info = read_device_info(c.devices[i]);
    s.slot = int(i);
    s.device = c.devices[i];
    s.name = info.name;
    s.uuid = gpu_uuid(s.device);
    s.pci_bus = pci_bus_id(s.device);
    s.peak_tflops = peaks_for(info).tflops(c.dtype);
    s.ecc_before = ecc_counts(s.device);
    samplers.push_back(std::make_unique<TelemetrySampler>(s.device));
    xids.push_back(std::make_unique<XidWatcher>(s.device));
    s.xid_status = xids.back()->status();
  }
  StartGate gate{int(n)};
  k::RankThreads threads{int(n)};  // the parallel trainer's runner; each slot sets its own GPU
  threads.start([&](int i) { SlotBurn(c, i, report.slots[i], live[i], gate).run(); });
  double last_line = 0;
  bool started = false;
  for (;;) {
    std::this_thread::sleep_for(std::chrono::duration<double>(kMonitorSeconds));
    for (auto& x : xids) x->poll();
    const double start = gate.start(), now = host_seconds();
    if (start != 0 && !started && c.on_start) c.on_start();
    started = start != 0;
    if (std::all_of(live.begin(), live.end(), [](const Live& l) { return l.done.load(); })) break;
    if (c.progress_seconds <= 0 || start == 0) continue;
    if (last_line == 0) last_line = start;
    if (now - last_line < c.progress_seconds) continue;
    std::fprintf(stderr, "%s\n",
                 progress_line(c.name, now - start, c.seconds,
                               live_view(report.slots, live, samplers, last_line, now))
                     .c_str());
    last_line = now;
  }
  threads.wait();
  for (std::size_t i = 0; i < n; ++i) {
    SlotResult& s = report.slots[i];
    xids[i]->poll();
    s.xids = xids[i]->xids();
    s.ecc_after = ecc_counts(s.device);
    s.telemetry = samplers[i]->stop(s.t0, s.t1);
  }
  return report;
}

}  // namespace xfbench::burn
