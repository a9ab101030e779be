#include "kernels/nccl_comm.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdlib>
#include <memory>

#define XFBENCH_USE_NCCL
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

#if defined(XFBENCH_NCCL_MPI)
// Finalises MPI at exit, after the communicators (constructed later, destroyed earlier).
struct MpiSession {
  MpiSession() {
    int ready = 0;
    MPI_Initialized(&ready);
    if (!ready) MPI_Init(nullptr, nullptr);
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

}  // namespace

bool mpi_enabled() { return g_mpi; }

void mpi_init_if_launched() {
#if defined(XFBENCH_NCCL_MPI)
  if (g_mpi || !launched_by_mpi()) return;
  static MpiSession session;
  g_mpi = true;
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

int local_rank() {
#if defined(XFBENCH_NCCL_MPI)
  if (g_mpi) {
    static const int r = [] {
      MPI_Comm node;
      MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
      int rank = 0;
      MPI_Comm_rank(node, &rank);
      MPI_Comm_free(&node);
      return rank;
    }();
    return r;
  }
#endif
  return 0;
}

long long sum_over_ranks(long long v) {
#if defined(XFBENCH_NCCL_MPI)
  if (g_mpi) {
    long long out = 0;
    MPI_Allreduce(&v, &out, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    return out;
  }
#endif
  return v;
}

double max_over_ranks(double v) {
#if defined(XFBENCH_NCCL_MPI)
  if (g_mpi) {
    double out = 0;
    MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return out;
  }
#endif
  return v;
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

std::vector<int> gpu_indices(const std::vector<std::string>& items) {
  std::vector<int> out;
  for (const std::string& g : items) {
    char* end = nullptr;
    long v = std::strtol(g.c_str(), &end, 10);
    if (g.empty() || *end != '\0' || v < 0 || v > 1023)
      XF_THROW(InvalidArgument, "--xfbench_gpus: '" + g + "' is not a GPU index");
    if (std::find(out.begin(), out.end(), int(v)) != out.end())
      XF_THROW(InvalidArgument, "--xfbench_gpus: GPU " + g + " given twice");
    out.push_back(int(v));
  }
  return out;
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
  int previous = 0;
  XF_CUDA_CHECK(cudaGetDevice(&previous));
  if (!g_mpi) {
    comm->nranks = int(devices.size());
    for (int i = 0; i < comm->nranks; ++i) comm->ranks.push_back(i);
    XF_NCCL_CHECK(ncclCommInitAll(comm->comms.data(), comm->nranks, devices.data()));
  } else {
#if defined(XFBENCH_NCCL_MPI)
    if (devices.size() != 1) XF_THROW(InvalidArgument, "under MPI each process drives one GPU");
    ncclUniqueId id;
    if (world_rank() == 0) XF_NCCL_CHECK(ncclGetUniqueId(&id));
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
    comm->nranks = world_size();
    comm->ranks.push_back(world_rank());
    XF_CUDA_CHECK(cudaSetDevice(devices[0]));
    XF_NCCL_CHECK(ncclCommInitRank(&comm->comms[0], comm->nranks, id, world_rank()));
#endif
  }
  XF_CUDA_CHECK(cudaSetDevice(previous));
  c.comm = std::move(comm);
  return *c.comm;
}

void abort_communicator() { cache().reset(true); }

}  // namespace xfbench::kernels
