#include "kernels/comm/nccl_comm.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <thread>

#define XFBENCH_USE_NCCL
#include "kernels/comm/rank_threads.hpp"
#include "xfbench/check_libs.hpp"
#include "xfbench/error.hpp"

#if defined(XFBENCH_NCCL_MPI)
#include <mpi.h>
#endif

namespace xfbench::kernels {
namespace {

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

bool launched_by_mpi() {
  return env_int("OMPI_COMM_WORLD_SIZE", 0) > 0 || env_int("PMI_SIZE", 0) > 0 ||
         std::getenv("PMIX_RANK") != nullptr || env_int("SLURM_NTASKS", 0) > 1;
}

bool g_mpi = false;
int g_local_rank = 0;
double g_timeout = kDefaultNcclTimeoutSeconds;
thread_local const std::string* t_section = nullptr;  // the case inside collective_section

#if defined(XFBENCH_NCCL_MPI)
// Finalises MPI at exit, after the communicators (constructed later, destroyed earlier).
struct MpiSession {
  MpiSession() {
    int ready = 0;
    MPI_Initialized(&ready);
    int provided = 0;  // MPI from the main thread only; the ranks' threads run CUDA and NCCL
    if (!ready) MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  }
  ~MpiSession() {
    int done = 0;
    MPI_Finalized(&done);
    if (!done) MPI_Finalize();
  }
};
#endif

// Owns the cached communicators; destroys them at exit (CUDA is still up: the plugin's statics go
// before the runtime's).
struct Cache {
  std::unique_ptr<Communicator> comm;
  void reset(bool abort) {
    if (!comm) return;
    for (ncclComm_t c : comm->comms) {
      if (c) abort ? ncclCommAbort(c) : ncclCommDestroy(c);
    }
    comm.reset();
  }
  ~Cache() { reset(false); }
};
Cache& cache() {
  static Cache c;
  return c;
}

// This process in an error line: its rank and GPU (MPI) or its GPUs.
std::string who() {
  std::vector<int> devices;
  if (cache().comm) {
    devices = cache().comm->devices;
  } else if (int d = 0; cudaGetDevice(&d) == cudaSuccess) {
    devices = {d};
  }
  return who_waits(g_mpi, world_rank(), world_size(), devices);
}

// Under MPI: the one line, then the whole job ends (the other ranks would wait for this one).
[[noreturn]] void end_job(std::string line, const std::string& reason) {
  if (t_section) line += ": " + *t_section;
  std::fflush(stdout);
  std::fprintf(stderr, "xfbench: %s: %s\n", line.c_str(), reason.c_str());
  std::fflush(stderr);
#if defined(XFBENCH_NCCL_MPI)
  MPI_Abort(MPI_COMM_WORLD, kRankFailed);
#endif
  std::_Exit(kRankFailed);
}

// A wait on NCCL work that failed or timed out: the communicators are aborted (their kernels
// stop), then the job ends (MPI) or the case gets the error.
[[noreturn]] void wait_failed(const std::string& reason) {
  const std::string here = who();
  abort_communicator();
  if (g_mpi) end_job(here, reason);
  XF_THROW(LibraryError, here + ": " + reason);
}

void wait_for_nccl(const std::function<cudaError_t()>& query) {
  std::string error;
  auto poll = [&] {
    const cudaError_t e = query();
    if (e == cudaSuccess) return WaitStatus::done;
    if (e != cudaErrorNotReady) XF_CUDA_CHECK(e);
    if (!cache().comm) return WaitStatus::pending;
    for (ncclComm_t c : cache().comm->comms) {
      ncclResult_t r = ncclSuccess;
      if (c && ncclCommGetAsyncError(c, &r) == ncclSuccess && r != ncclSuccess &&
          r != ncclInProgress) {
        const char* last = ncclGetLastError(c);
        error = std::string("NCCL ") + ncclGetErrorString(r) + (last && *last ? ": " : "") +
                (last ? last : "");
        return WaitStatus::failed;
      }
    }
    return WaitStatus::pending;
  };
  switch (poll_until(poll, g_timeout, steady_poll_clock())) {
    case WaitStatus::done:
      return;
    case WaitStatus::failed:
      wait_failed(error);
    case WaitStatus::pending:
      wait_failed(timeout_reason(g_timeout, "the collectives to complete"));
  }
}

#if defined(XFBENCH_NCCL_MPI)
// Completes a non-blocking MPI call within the time-out, or ends the job.
void wait_mpi(MPI_Request& request, const char* what) {
  auto poll = [&] {
    int done = 0;
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    return done ? WaitStatus::done : WaitStatus::pending;
  };
  if (poll_until(poll, g_timeout, steady_poll_clock()) == WaitStatus::done) return;
  end_job(who(), timeout_reason(g_timeout, std::string("the other ranks in ") + what));
}

std::string broadcast(std::string s, int root) {
  long long size = (long long)s.size();
  MPI_Request r;
  MPI_Ibcast(&size, 1, MPI_LONG_LONG, root, MPI_COMM_WORLD, &r);
  wait_mpi(r, "a broadcast");
  s.resize(std::size_t(size));
  MPI_Ibcast(s.data(), int(size), MPI_CHAR, root, MPI_COMM_WORLD, &r);
  wait_mpi(r, "a broadcast");
  return s;
}
#endif

}  // namespace

void set_nccl_timeout(double seconds) {
  if (!(seconds > 0 && seconds <= 86400))
    XF_THROW(InvalidArgument, "--xfbench_nccl_timeout_s must be in (0, 86400] seconds");
  g_timeout = seconds;
}

double nccl_timeout_seconds() { return g_timeout; }

PollClock steady_poll_clock() {
  return {[] {
            using namespace std::chrono;
            return duration<double>(steady_clock::now().time_since_epoch()).count();
          },
          [] { std::this_thread::sleep_for(std::chrono::microseconds(100)); }};
}

WaitStatus poll_until(const std::function<WaitStatus()>& poll, double timeout_s,
                      const PollClock& clock) {
  const double start = clock.now();
  for (;;) {
    const WaitStatus s = poll();
    if (s != WaitStatus::pending || clock.now() - start >= timeout_s) return s;
    clock.pause();
  }
}

std::string who_waits(bool mpi, int rank, int nranks, const std::vector<int>& devices) {
  if (mpi) {
    std::string s = "rank " + std::to_string(rank) + " of " + std::to_string(nranks);
    return devices.empty() ? s : s + " (GPU " + std::to_string(devices.front()) + ")";
  }
  std::string s = devices.size() == 1 ? "GPU" : "GPUs";
  for (std::size_t i = 0; i < devices.size(); ++i)
    s += (i ? "," : " ") + std::to_string(devices[i]);
  return s + " (one process)";
}

std::string timeout_reason(double timeout_s, const std::string& waiting_for) {
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%g", timeout_s);
  return std::string("timed out after ") + seconds + " s waiting for " + waiting_for +
         " (--xfbench_nccl_timeout_s)";
}

bool mpi_enabled() { return g_mpi; }

void mpi_init_if_launched() {
#if defined(XFBENCH_NCCL_MPI)
  if (g_mpi || !launched_by_mpi()) return;
  static MpiSession session;
  g_mpi = true;
  MPI_Comm node;  // the processes of this node, for local_rank
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &g_local_rank);
  MPI_Comm_free(&node);
#endif
}

int world_rank() {
#if defined(XFBENCH_NCCL_MPI)
  if (g_mpi) {
    int r = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
  }
#endif
  return 0;
}

int world_size() {
#if defined(XFBENCH_NCCL_MPI)
  if (g_mpi) {
    int n = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    return n;
  }
#endif
  return 1;
}

int local_rank() { return g_local_rank; }

long long sum_over_ranks(long long v) {
#if defined(XFBENCH_NCCL_MPI)
  if (g_mpi) {
    MPI_Request r;
    MPI_Iallreduce(MPI_IN_PLACE, &v, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD, &r);
    wait_mpi(r, "an all-reduce (sum)");
  }
#endif
  return v;
}

double max_over_ranks(double v) {
  max_over_ranks(&v, 1);
  return v;
}

void max_over_ranks(double* values, std::size_t count) {
#if defined(XFBENCH_NCCL_MPI)
  if (g_mpi) {
    MPI_Request r;
    MPI_Iallreduce(MPI_IN_PLACE, values, int(count), MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD, &r);
    wait_mpi(r, "an all-reduce (max)");
  }
#else
  (void)values, (void)count;
#endif
}

std::string mpi_build_status() {
#if defined(XFBENCH_NCCL_MPI)
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  MPI_Get_library_version(version, &len);
  std::string v(version, std::size_t(len));
  if (auto nl = v.find_first_of(",\n"); nl != std::string::npos) v.resize(nl);
  return "built with MPI (" + v + ")";
#else
  return "built without MPI";
#endif
}

std::vector<int> local_devices(const std::vector<int>& gpus, int visible, int wanted) {
  if (g_mpi) return {local_rank() % std::max(visible, 1)};
  std::vector<int> devs = gpus;
  if (devs.empty())
    for (int i = 0; i < visible && (wanted <= 0 || i < wanted); ++i) devs.push_back(i);
  for (int d : devs)
    if (d >= visible)
      XF_THROW(Unsupported, "--xfbench_gpus names GPU " + std::to_string(d) + " but " +
                                std::to_string(visible) + " are visible");
  if (wanted > 0 && int(devs.size()) > wanted) devs.resize(std::size_t(wanted));
  if (wanted > 0 && int(devs.size()) < wanted)
    XF_THROW(Unsupported, "needs " + std::to_string(wanted) + " GPUs, " +
                              std::to_string(devs.size()) + (gpus.empty() ? " visible" : " given"));
  return devs;
}

Communicator& communicator(const std::vector<int>& devices) {
  Cache& c = cache();
  if (c.comm && c.comm->devices == devices) return *c.comm;
  c.reset(false);
  auto comm = std::make_unique<Communicator>();
  comm->devices = devices;
  comm->comms.assign(devices.size(), nullptr);
  const OnDevice keep;  // NCCL's start-up switches devices
  if (!g_mpi) {
    comm->nranks = int(devices.size());
    for (int i = 0; i < comm->nranks; ++i) comm->ranks.push_back(i);
    XF_NCCL_CHECK(ncclCommInitAll(comm->comms.data(), comm->nranks, devices.data()));
  } else {
#if defined(XFBENCH_NCCL_MPI)
    if (devices.size() != 1) XF_THROW(InvalidArgument, "under MPI each process drives one GPU");
    // Every rank meets before NCCL's blocking start-up, which would wait for a missing one forever.
    MPI_Request r;
    MPI_Ibarrier(MPI_COMM_WORLD, &r);
    wait_mpi(r, "the barrier before creating the NCCL communicator");
    ncclUniqueId id;
    if (world_rank() == 0) XF_NCCL_CHECK(ncclGetUniqueId(&id));
    MPI_Ibcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD, &r);
    wait_mpi(r, "the broadcast of the NCCL id");
    comm->nranks = world_size();
    comm->ranks.push_back(world_rank());
    XF_CUDA_CHECK(cudaSetDevice(devices[0]));
    XF_NCCL_CHECK(ncclCommInitRank(&comm->comms[0], comm->nranks, id, world_rank()));
#endif
  }
  c.comm = std::move(comm);
  return *c.comm;
}

void abort_communicator() { cache().reset(true); }

void wait_for_event(cudaEvent_t event) {
  wait_for_nccl([event] { return cudaEventQuery(event); });
}

void wait_for_stream(cudaStream_t stream) {
  wait_for_nccl([stream] { return cudaStreamQuery(stream); });
}

void collective_section(const std::string& what, const std::function<void()>& work) {
  struct Scope {
    const std::string* outer = t_section;
    explicit Scope(const std::string& w) { t_section = &w; }
    ~Scope() { t_section = outer; }
  } scope(what);
  try {
    work();
  } catch (const ValidationError&) {
    throw;  // decided over all ranks
  } catch (const LibraryError& e) {
    if (g_mpi) end_job(who(), e.what());
    abort_communicator();  // a failed NCCL call may leave the communicators unusable
    throw;
  } catch (const Unsupported& e) {
    if (g_mpi) end_job(who(), "unsupported: " + e.message());
    throw;
  } catch (const std::exception& e) {
    if (g_mpi) end_job(who(), e.what());
    throw;
  } catch (...) {
    if (g_mpi) end_job(who(), "unknown exception");
    throw;
  }
}

std::string agreed_validation(const std::function<std::string()>& check) {
  std::string result, failure;
  std::exception_ptr error;
  try {
    result = check();
  } catch (const ValidationError& e) {
    error = std::current_exception();
    failure = e.message();
  }
#if defined(XFBENCH_NCCL_MPI)
  if (g_mpi) {
    const int rank = world_rank();
    const double first = max_over_ranks(error ? -double(rank) : -1e9);  // the lowest failing rank
    if (first <= -1e9) return result;
    const int root = int(-first);
    XF_THROW(ValidationError, "rank " + std::to_string(root) + ": " + broadcast(failure, root));
  }
#endif
  if (error) std::rethrow_exception(error);
  return result;
}

}  // namespace xfbench::kernels
