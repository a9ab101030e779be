// The timed search among a plan's candidates (Gemm::tune, choose_by_rounds) and the process-wide
// plan cache (gemm_plan, clear_gemm_plans) that keeps the searches' choices.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "kernels/detail/gemm_impl.hpp"
#include "kernels/gemm.hpp"
#include "kernels/gemm_plans_file.hpp"
#include "xfbench/error.hpp"

namespace xfbench::kernels {

using detail::context_mutex;
using detail::contexts;
using detail::current_device;

namespace {
// The search's final: seven paired rounds; a challenger must win six of them (a one-sided sign
// test at p = 0.06) and be at least 1% faster by median to replace the incumbent.
constexpr int kFinalRounds = 7;
constexpr double kClearMargin = 0.01;
constexpr int kConfirmRounds = 5;      // from idle (GemmTuneOptions::idle_ms): four of five to win
constexpr int kSteadyFinalRounds = 5;  // GemmTuneOptions::final_ms: four of five to win
constexpr double kChoiceRoundSeconds = 0.05;  // choose_faster's timed runs (steady final)

struct EventPair {
  cudaEvent_t start = nullptr, stop = nullptr;
  EventPair() {
    XF_CUDA_CHECK(cudaEventCreate(&start));
    XF_CUDA_CHECK(cudaEventCreate(&stop));
  }
  ~EventPair() {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
  double seconds() const {
    XF_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    XF_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    return ms / 1e3;
  }
};
// Seconds per launch of each way in each of `rounds` rounds, run in alternating order so that
// clocks falling under power (or rising) favour no position; each run after `idle_ms` of idle GPU
// (and one untimed launch) when that is positive, after `lead` untimed launches of the same way.
std::vector<std::vector<double>> time_rounds(cudaStream_t stream, EventPair& ev,
                                             const std::vector<std::function<void()>>& ways,
                                             int reps, int rounds, int idle_ms = 0, int lead = 0) {
  std::vector<std::vector<double>> t(ways.size());
  for (int round = 0; round < rounds; ++round) {
    for (std::size_t step = 0; step < ways.size(); ++step) {
      const std::size_t j = round % 2 ? ways.size() - 1 - step : step;
      if (idle_ms > 0) {
        XF_CUDA_CHECK(cudaStreamSynchronize(stream));
        std::this_thread::sleep_for(std::chrono::milliseconds(idle_ms));
        ways[j]();
      }
      for (int rep = 0; rep < lead; ++rep) ways[j]();
      XF_CUDA_CHECK(cudaEventRecord(ev.start, stream));
      for (int rep = 0; rep < reps; ++rep) ways[j]();
      XF_CUDA_CHECK(cudaEventRecord(ev.stop, stream));
      t[j].push_back(ev.seconds() / reps);
    }
  }
  return t;
}

}  // namespace

int choose_by_rounds(const std::vector<std::vector<double>>& rounds, int incumbent, int min_wins,
                     double margin) {
  if (incumbent < 0 || incumbent >= int(rounds.size()))
    XF_THROW(InvalidArgument, "choose_by_rounds: incumbent out of range");
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? std::numeric_limits<double>::infinity() : v[v.size() / 2];
  };
  // King of the hill in list order: each challenger must beat the one holding the place so far.
  // Challengers within the margin of each other are a tie, which goes to the earlier (the list's
  // order is cuBLASLt's ranking), never to the luckier: run to run, the same kernel wins.
  int best = incumbent;
  for (int i = 0; i < int(rounds.size()); ++i) {
    const std::vector<double>& t = rounds[std::size_t(i)];
    const std::vector<double>& held = rounds[std::size_t(best)];
    if (i == incumbent || t.size() != held.size()) continue;
    int wins = 0;
    for (std::size_t r = 0; r < t.size(); ++r) wins += t[r] < held[r];
    if (wins >= min_wins && median(t) <= median(held) * (1.0 - margin)) best = i;
  }
  return best;
}

namespace {
// XFBENCH_GEMM_LOG=1: one stderr line for each search's choice (and each choice from the file).
bool gemm_log() {
  static const bool log = [] {
    const char* v = std::getenv("XFBENCH_GEMM_LOG");
    return v && *v && std::string(v) != "0";
  }();
  return log;
}

// Adds a search's choice to the XFBENCH_GEMM_PLANS file (after Gemm::tune; defined below).
void record_search(const Gemm& plan, const std::string& key);
}  // namespace

GemmTuneResult Gemm::tune(cudaStream_t stream, const GemmOperands& ops,
                          const GemmTuneOptions& options) {
  const int n = candidates();
  GemmTuneResult r;
  r.seconds.assign(std::size_t(n), std::numeric_limits<double>::infinity());
  std::vector<bool> runs(std::size_t(n), true);
  EventPair ev;
  // Warm every candidate once (module load, caches); a candidate that cannot launch here is
  // dropped and the others still compete.
  std::exception_ptr failure;
  for (int i = 0; i < n; ++i) {
    try {
      impl_->enqueue(stream, ops, i);
    } catch (const LibraryError&) {
      runs[std::size_t(i)] = false;
      failure = std::current_exception();
    }
  }
  const int first = int(std::find(runs.begin(), runs.end(), true) - runs.begin());
  if (first == n) std::rethrow_exception(failure);  // none ran: the library's own reason
  XF_CUDA_CHECK(cudaEventRecord(ev.start, stream));
  impl_->enqueue(stream, ops, first);
  XF_CUDA_CHECK(cudaEventRecord(ev.stop, stream));
  // Candidates `list` timed by time_rounds (each launch one candidate's product).
  auto time_candidates = [&](const std::vector<int>& list, int reps, int rounds, int idle_ms = 0,
                             int lead = 0) {
    std::vector<std::function<void()>> ways;
    for (int c : list) ways.push_back([&, c] { impl_->enqueue(stream, ops, c); });
    return time_rounds(stream, ev, ways, reps, rounds, idle_ms, lead);
  };
  // Bursts of about 2 ms per candidate and round; each candidate keeps its best round.
  const double single = std::max(ev.seconds(), 1e-7);
  const int reps = int(std::clamp(2e-3 / single, 1.0, 50.0));
  std::vector<int> order;
  for (int i = 0; i < n; ++i)
    if (runs[std::size_t(i)]) order.push_back(i);
  const std::vector<std::vector<double>> burst = time_candidates(order, reps, 3);
  for (std::size_t j = 0; j < order.size(); ++j)
    r.seconds[std::size_t(order[j])] = *std::min_element(burst[j].begin(), burst[j].end());
  // Short bursts can favour a kernel that loses once clocks settle under the power limit, and
  // near-ties in them are noise. Finalists: the incumbent (cublasGemmEx, what torch.matmul runs,
  // else cuBLASLt's first choice) and the three fastest of the bursts. They meet again over seven
  // rounds of ~10 ms runs, and a challenger replaces the incumbent only when clearly faster.
  std::stable_sort(order.begin(), order.end(), [&](int x, int y) {
    return r.seconds[std::size_t(x)] < r.seconds[std::size_t(y)];
  });
  const int blas_index = impl_->blas_candidate() ? int(impl_->heur.size()) : -1;
  const int incumbent = blas_index >= 0 && runs[std::size_t(blas_index)] ? blas_index : first;
  std::vector<int> finalists{incumbent};
  for (std::size_t j = 0; j < order.size() && finalists.size() < 4; ++j)
    if (order[j] != incumbent) finalists.push_back(order[j]);
  std::sort(finalists.begin() + 1, finalists.end());  // the final's ties go by cuBLASLt's rank
  r.best = incumbent;
  // ~10 ms (at most five bursts; one launch when it is longer: a 20 ms product needs no five),
  // or the steady final's runs (GemmTuneOptions::final_ms).
  const bool steady = options.final_ms > 0;
  const int final_reps = steady ? int(std::clamp(options.final_ms * 1e-3 / single, 1.0, 1e6))
                                : int(std::clamp(std::min(5.0 * reps, 1e-2 / single), 1.0, 500.0));
  const int final_rounds = steady ? kSteadyFinalRounds : kFinalRounds;
  if (finalists.size() > 1) {
    const std::vector<std::vector<double>> t =
        time_candidates(finalists, final_reps, final_rounds, 0, steady ? final_reps / 2 : 0);
    r.best = finalists[std::size_t(choose_by_rounds(t, 0, final_rounds - 1, kClearMargin))];
  }
  if (r.best != incumbent && options.idle_ms > 0) {
    const std::vector<std::vector<double>> t =
        time_candidates({incumbent, r.best}, 5 * final_reps, kConfirmRounds, options.idle_ms);
    if (choose_by_rounds(t, 0, kConfirmRounds - 1, kClearMargin) != 1) r.best = incumbent;
  }
  impl_->sel = r.best;
  impl_->tuned = true;
  if (gemm_log())
    std::fprintf(stderr, "xfbench gemm search: %s -> %s\n", desc().describe().c_str(),
                 algo_info().label().c_str());
  if (!impl_->plan_key.empty()) record_search(*this, impl_->plan_key);
  return r;
}

// ---- Plan cache --------------------------------------------------------------------------------

namespace {
using PlanKey = std::tuple<int, std::string>;

std::string key_of(const GemmDesc& d, const GemmOptions& o) {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "%d|%d|%d%d|%lld,%lld,%lld|%lld,%lld,%lld|%lld|%lld,%lld,%lld|%d|"
                "%d|%d|%zu|%d|%d|%d|%d%d",
                int(d.precision), int(d.out_type()), d.trans_a, d.trans_b, (long long)d.m,
                (long long)d.n, (long long)d.k, (long long)d.a_ld(), (long long)d.b_ld(),
                (long long)d.c_ld(), (long long)d.batch, (long long)d.a_stride(),
                (long long)d.b_stride(), (long long)d.c_stride(), int(d.epilogue), d.alignment,
                d.fp8_fast_accum, o.workspace_bytes, o.heuristics, o.private_workspace, o.variants,
                d.a_e5m2, d.b_e5m2);
  return buf;
}

std::mutex& plan_mutex() {
  static std::mutex m;
  return m;
}
// Leaked on purpose (see contexts()).
std::map<PlanKey, std::unique_ptr<Gemm>>& plans() {
  static auto* p = new std::map<PlanKey, std::unique_ptr<Gemm>>();
  return *p;
}

// The searches' outcomes (candidate chosen, of how many), kept when the plans go: a plan built
// again for the same key (same device, description, options: the same heuristic list) starts
// searched, so a case that clears the plans to measure its own memory does not search again.
struct SearchOutcome {
  int index = 0, candidates = 0;
};
std::map<PlanKey, SearchOutcome>& searched() {
  static auto* s = new std::map<PlanKey, SearchOutcome>();
  return *s;
}
}  // namespace

// ---- The searches' file (XFBENCH_GEMM_PLANS, gemm_plans_file.hpp) ----------------------------

namespace {
const std::string& plans_path() {
  static const std::string path = [] {
    const char* v = std::getenv("XFBENCH_GEMM_PLANS");
    return std::string(v ? v : "");
  }();
  return path;
}

// The file's records, read on first use (under plan_mutex()); a malformed file throws each time.
std::vector<detail::SearchRecord>* file_records() {
  if (plans_path().empty()) return nullptr;
  static std::vector<detail::SearchRecord> records;
  static bool read = false;
  if (!read) {
    records = detail::read_search_file(plans_path());
    read = true;
  }
  return &records;
}

std::string gpu_name(int device) {
  static std::map<int, std::string> names;  // under plan_mutex()
  auto it = names.find(device);
  if (it == names.end()) {
    cudaDeviceProp prop{};
    XF_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    it = names.emplace(device, prop.name).first;
  }
  return it->second;
}

// The file's record of `key` for `device`'s GPU and this cuBLASLt version, or null (under
// plan_mutex(); records: the file's).
const detail::SearchRecord* find_record(const std::vector<detail::SearchRecord>& records,
                                        int device, const std::string& key) {
  return detail::find_search_record(records, gpu_name(device), long(cublasLtGetVersion()), key);
}

// Adds (or replaces) the record of `key` for the current GPU and cuBLASLt version and writes the
// file; nothing without one. `kernel`: the chosen candidate's label.
void save_record(const std::string& key, const std::string& product, int index, int candidates,
                 const std::string& kernel) {
  std::lock_guard<std::mutex> lock(plan_mutex());
  std::vector<detail::SearchRecord>* records = file_records();
  if (!records) return;
  detail::SearchRecord r;
  r.gpu = gpu_name(current_device());
  r.cublaslt = long(cublasLtGetVersion());
  r.key = key;
  r.product = product;
  r.index = index;
  r.candidates = candidates;
  r.kernel = kernel;
  detail::upsert_search_record(*records, r);
  detail::write_search_file(plans_path(), *records);
}

// A new plan takes the file's choice when GPU, cuBLASLt version, key, candidate count and the
// chosen candidate's kernel all agree; otherwise it stays unsearched.
bool adopt_recorded_search(Gemm& plan, const std::vector<detail::SearchRecord>& records,
                           const PlanKey& key) {
  const detail::SearchRecord* r = find_record(records, std::get<0>(key), std::get<1>(key));
  if (!r || r->candidates != plan.candidates() || plan.algo_info(r->index).label() != r->kernel)
    return false;
  plan.select(r->index);
  if (gemm_log())
    std::fprintf(stderr, "xfbench gemm plan from %s: %s -> %s\n", plans_path().c_str(),
                 plan.desc().describe().c_str(), plan.algo_info().label().c_str());
  return true;
}

void record_search(const Gemm& plan, const std::string& key) {
  save_record(key, plan.desc().describe(), plan.selected(), plan.candidates(),
              plan.algo_info().label());
}

// choose_faster's record: the index of the way the file chose for this GPU, cuBLASLt version and
// key, with as many ways and that way's label; -1 when it holds none.
int recorded_choice(const ChoiceRecord& c) {
  std::lock_guard<std::mutex> lock(plan_mutex());
  const std::vector<detail::SearchRecord>* records = file_records();
  const detail::SearchRecord* r =
      records ? find_record(*records, current_device(), c.key) : nullptr;
  if (!r || r->candidates != int(c.labels.size()) || r->index < 0 || r->index >= r->candidates ||
      c.labels[std::size_t(r->index)] != r->kernel)
    return -1;
  if (gemm_log())
    std::fprintf(stderr, "xfbench choice from %s: %s -> %s\n", plans_path().c_str(),
                 c.product.c_str(), r->kernel.c_str());
  return r->index;
}

void record_choice(const ChoiceRecord& c, int index) {
  const std::string& label = c.labels[std::size_t(index)];
  if (gemm_log())
    std::fprintf(stderr, "xfbench choice: %s -> %s\n", c.product.c_str(), label.c_str());
  save_record(c.key, c.product, index, int(c.labels.size()), label);
}
}  // namespace

int choose_faster(cudaStream_t stream, const std::vector<std::function<void()>>& ways,
                  std::vector<double>* seconds, const ChoiceRecord* record) {
  if (ways.empty()) XF_THROW(InvalidArgument, "choose_faster: nothing to choose from");
  if (record && record->labels.size() != ways.size())
    XF_THROW(InvalidArgument, "choose_faster: " + std::to_string(record->labels.size()) +
                                  " labels for " + std::to_string(ways.size()) + " ways");
  if (seconds) seconds->clear();
  if (record) {
    const int recorded = recorded_choice(*record);
    if (recorded >= 0) return recorded;
  }
  EventPair ev;
  double single = 0;
  for (const auto& way : ways) {  // warm each; the slowest sets the runs' length
    way();
    XF_CUDA_CHECK(cudaEventRecord(ev.start, stream));
    way();
    XF_CUDA_CHECK(cudaEventRecord(ev.stop, stream));
    single = std::max(single, ev.seconds());
  }
  const int reps = int(std::clamp(kChoiceRoundSeconds / std::max(single, 1e-7), 1.0, 5e3));
  const std::vector<std::vector<double>> t =
      time_rounds(stream, ev, ways, reps, kSteadyFinalRounds, 0, reps / 2);
  if (seconds)
    for (std::vector<double> v : t) {
      std::sort(v.begin(), v.end());
      seconds->push_back(v[v.size() / 2]);
    }
  const int chosen = choose_by_rounds(t, 0, kSteadyFinalRounds - 1, kClearMargin);
  if (record) record_choice(*record, chosen);
  return chosen;
}

Gemm& gemm_plan(const GemmDesc& desc, const GemmOptions& options) {
  PlanKey key{current_device(), key_of(desc, options)};
  std::lock_guard<std::mutex> lock(plan_mutex());
  auto it = plans().find(key);
  if (it == plans().end()) {
    const std::vector<detail::SearchRecord>* records = file_records();  // may throw: nothing built
    it = plans().emplace(key, std::make_unique<Gemm>(desc, options)).first;
    Gemm& plan = *it->second;
    plan.impl_->plan_key = std::get<1>(key);
    auto done = searched().find(key);
    if (done != searched().end() && done->second.candidates == plan.candidates()) {
      plan.select(done->second.index);
      plan.impl_->tuned = true;
    } else if (records && adopt_recorded_search(plan, *records, key)) {
      plan.impl_->tuned = true;
    }
  }
  return *it->second;
}

void clear_gemm_plans() {
  {
    std::lock_guard<std::mutex> lock(plan_mutex());
    for (const auto& [key, plan] : plans())
      if (plan->tuned()) searched()[key] = {plan->selected(), plan->candidates()};
    plans().clear();
  }
  std::lock_guard<std::mutex> lock(context_mutex());
  for (auto& [device, c] : contexts()) c.shared.reset();
}

}  // namespace xfbench::kernels
