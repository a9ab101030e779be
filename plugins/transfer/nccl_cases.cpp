// The NCCL family (nccl-tests as cases): collectives over all of this node's GPUs from one
// process, or one GPU per process across nodes under MPI. Inputs are small integers per rank, so
// every result is exact and checked on the GPU (`wrong` counter) before and after timing.
#include <algorithm>
#include <cmath>
#include <memory>

#include "copy_kernels.hpp"
#include "kernels/comm/nccl_comm.hpp"
#include "kernels/comm/nccl_timer.hpp"
#include "transfer_cases.hpp"
#include "xfbench/topology.hpp"
#include "xfbench/xfbench.hpp"
#define XFBENCH_USE_NCCL
#include "xfbench/check_libs.hpp"

namespace xfbench::transfer {
namespace {

using kernels::Communicator;
using kernels::mpi_enabled;
using kernels::sum_over_ranks;
using kernels::world_size;

struct NcclCase {
  Collective op;
  Dtype dtype;
  std::size_t bytes;
};

ncclDataType_t nccl_type(Dtype t) {
  if (t != Dtype::fp32 && t != Dtype::fp16 && t != Dtype::bf16)
    XF_THROW(InvalidArgument,
             std::string("NCCL cases run fp32, fp16 or bf16, not ") + to_string(t));
  return kernels::nccl_type(element_of(t));
}

// Buffers, stream and join event of one local rank.
struct RankData {
  int device = 0, rank = 0;
  DeviceMemory send, recv;
  std::unique_ptr<Stream> stream;
  std::unique_ptr<Event> join;
};

void issue(const NcclCase& c, const CollectiveShape& shape, const Communicator& comm,
           std::vector<RankData>& ranks) {
  const ncclDataType_t type = nccl_type(c.dtype);
  const std::size_t es = size_of(c.dtype);
  const int n = comm.nranks;
  XF_NCCL_CHECK(ncclGroupStart());
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    RankData& r = ranks[i];
    ncclComm_t cm = comm.comms[i];
    cudaStream_t s = *r.stream;
    const void* in = r.send.get();
    void* out = r.recv.get();
    switch (c.op) {
      case Collective::allreduce:
        XF_NCCL_CHECK(ncclAllReduce(in, out, shape.chunk, type, ncclSum, cm, s));
        break;
      case Collective::allgather:
        XF_NCCL_CHECK(ncclAllGather(in, out, shape.chunk, type, cm, s));
        break;
      case Collective::reducescatter:
        XF_NCCL_CHECK(ncclReduceScatter(in, out, shape.chunk, type, ncclSum, cm, s));
        break;
      case Collective::broadcast:
        XF_NCCL_CHECK(ncclBroadcast(in, out, shape.chunk, type, 0, cm, s));
        break;
      case Collective::reduce:
        XF_NCCL_CHECK(ncclReduce(in, out, shape.chunk, type, ncclSum, 0, cm, s));
        break;
      case Collective::alltoall:
        for (int q = 0; q < n; ++q) {
          const std::size_t off = std::size_t(q) * shape.chunk * es;
          XF_NCCL_CHECK(ncclSend(static_cast<const char*>(in) + off, shape.chunk, type, q, cm, s));
          XF_NCCL_CHECK(ncclRecv(static_cast<char*>(out) + off, shape.chunk, type, q, cm, s));
        }
        break;
      case Collective::sendrecv:
        XF_NCCL_CHECK(ncclSend(in, shape.chunk, type, (r.rank + 1) % n, cm, s));
        XF_NCCL_CHECK(ncclRecv(out, shape.chunk, type, (r.rank + n - 1) % n, cm, s));
        break;
    }
  }
  XF_NCCL_CHECK(ncclGroupEnd());
}

// Wrong elements over all ranks (every process gets the total).
long long count_all_wrong(const NcclCase& c, const CollectiveShape& shape, int nranks,
                          std::vector<RankData>& ranks) {
  long long wrong = 0;
  for (RankData& r : ranks) {
    XF_CUDA_CHECK(cudaSetDevice(r.device));
    wrong += (long long)count_wrong(static_cast<CheckOp>(int(c.op)), c.dtype, r.recv.get(),
                                    shape.recv_count, r.rank, nranks, shape.chunk, *r.stream);
  }
  return sum_over_ranks(wrong);
}

std::string describe_ranks(const Communicator& comm) {
  if (comm.nranks == 1) return "1 rank: baseline, no communication";
  std::string s = std::to_string(comm.nranks) + " ranks";
  if (mpi_enabled()) return s + " (MPI, one GPU per process)";
  s += " (one process, GPUs";
  for (int d : comm.devices) s += " " + std::to_string(d);
  s += ")";
  if (comm.devices.size() >= 2) {
    int links = nvlink_count(comm.devices[0], comm.devices[1]);
    s += links > 0 ? ", GPUs 0-1 NV" + std::to_string(links) : links == 0 ? ", no NVLink" : "";
  }
  return s;
}

// Validation, timing and the re-check after it, on the communicator over this process's GPUs.
void run_collectives(benchmark::State& state, const NcclCase& c, const CollectiveShape& shape,
                     const std::vector<int>& devices) {
  const std::size_t es = size_of(c.dtype);
  Communicator& comm = kernels::communicator(devices);
  const int nranks = comm.nranks;
  std::vector<RankData> ranks(devices.size());
  for (std::size_t i = 0; i < devices.size(); ++i) {
    RankData& r = ranks[i];
    r.device = devices[i];
    r.rank = comm.ranks[i];
    XF_CUDA_CHECK(cudaSetDevice(r.device));
    r.send = DeviceMemory(shape.send_count * es);
    r.recv = DeviceMemory(shape.recv_count * es);
    r.stream = std::make_unique<Stream>();
    r.join = std::make_unique<Event>();
    fill_inputs(r.send.get(), shape.send_count, c.dtype, r.rank, *r.stream);
  }
  XF_CUDA_CHECK(cudaSetDevice(devices[0]));
  Event fork;
  cudaStream_t main = *ranks[0].stream;
  // All ranks' streams start after `main` reaches the launch and `main` waits for all of them,
  // so the events on `main` time the whole collective (the slowest GPU).
  auto launch = [&](cudaStream_t s) {
    if (ranks.size() > 1) {
      fork.record(s);
      for (std::size_t i = 1; i < ranks.size(); ++i)
        XF_CUDA_CHECK(cudaStreamWaitEvent(*ranks[i].stream, fork.get()));
    }
    issue(c, shape, comm, ranks);
    for (std::size_t i = 1; i < ranks.size(); ++i) {
      ranks[i].join->record(*ranks[i].stream);
      XF_CUDA_CHECK(cudaStreamWaitEvent(s, ranks[i].join->get()));
    }
  };
  auto sync_all = [&] {
    for (RankData& r : ranks) kernels::wait_for_stream(*r.stream);
  };

  const bool check = should_validate();
  long long wrong = 0;
  if (check) {
    for (RankData& r : ranks) {
      XF_CUDA_CHECK(cudaSetDevice(r.device));
      poison(r.recv.get(), shape.recv_count * es, *r.stream);
    }
    sync_all();
    XF_CUDA_CHECK(cudaSetDevice(devices[0]));
    launch(main);
    sync_all();
    wrong = count_all_wrong(c, shape, nranks, ranks);
    if (wrong) {
      XF_THROW(ValidationError, std::to_string(wrong) + " wrong elements (of " +
                                    std::to_string(shape.recv_count) + " per rank)");
    }
  }
  XF_CUDA_CHECK(cudaSetDevice(devices[0]));
  const Timing t = time_gpu(state, main, launch, kernels::collective_timer_options());
  sync_all();
  if (check) {  // the last timed launch left its result: check it as well
    wrong = count_all_wrong(c, shape, nranks, ranks);
    if (wrong) {
      XF_THROW(ValidationError, std::to_string(wrong) + " wrong elements after the timed launches");
    }
    state.counters["wrong"] = double(wrong);
  }
  const double algbw = gbps(double(shape.bytes), t.seconds);
  state.counters["algbw"] = algbw;
  state.counters["busbw"] = algbw * bus_factor(c.op, nranks);
  std::string label = describe_ranks(comm);
  if (shape.bytes != c.bytes) label += "; ran " + format_size(shape.bytes);
  add_label(state, label);
}

void run_nccl_case(benchmark::State& state, const NcclCase& c, const std::vector<int>& gpus,
                   const std::string& name) {
  const std::vector<int> devices = kernels::local_devices(gpus, device_count());
  const int nranks = mpi_enabled() ? world_size() : int(devices.size());
  nccl_type(c.dtype);  // rejects other dtypes before any GPU work
  if (nranks > max_exact_ranks(c.dtype)) {
    XF_THROW(Unsupported, std::to_string(nranks) +
                              " ranks: sums of the test inputs would not be "
                              "exact in " +
                              to_string(c.dtype));
  }
  const CollectiveShape shape = shape_for(c.op, c.bytes, size_of(c.dtype), nranks);
  if (shape.chunk == 0) {
    XF_THROW(Unsupported, format_size(c.bytes) + " is less than one " + to_string(c.dtype) +
                              " element per rank for " + std::to_string(nranks) + " ranks");
  }
  OnDevice guard;
  const std::size_t es = size_of(c.dtype);
  long long short_of_memory = 0;
  for (int d : devices) {
    XF_CUDA_CHECK(cudaSetDevice(d));
    std::size_t free_b = 0, total_b = 0;
    XF_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    short_of_memory += double((shape.send_count + shape.recv_count) * es) > 0.85 * double(free_b);
  }
  if (sum_over_ranks(short_of_memory) > 0) {
    XF_THROW(Unsupported, "send + receive buffers of " +
                              format_size((shape.send_count + shape.recv_count) * es) +
                              " do not fit in a GPU's free memory");
  }

  // From here every rank joins the same collectives (kernels::collective_section).
  kernels::collective_section(name, [&] { run_collectives(state, c, shape, devices); });
}

}  // namespace

void register_nccl_cases(const std::vector<int>& gpus, const std::vector<Collective>& ops,
                         const std::vector<Dtype>& dtypes, const Sizes& sizes) {
  int n = 1;
  if (mpi_enabled()) {
    n = world_size();
  } else if (!gpus.empty()) {
    n = int(gpus.size());
  } else {
    n = std::max(1, device_count());
  }
  // The default suite holds the first dtype's collectives when there are ranks to talk to; a
  // 1-rank baseline (one GPU) runs only when a filter selects it.
  for (Collective op : ops) {
    for (Dtype t : dtypes) {
      for (std::size_t b : sizes.all) {
        NcclCase c{op, t, b};
        const std::string name = nccl_name(op, t, n, b);
        add_case(
            name, [c, gpus, name](benchmark::State& s) { run_nccl_case(s, c, gpus, name); },
            Needs::gpu, n >= 2 && t == dtypes.front() ? sizes.suite(b) : Suite::extended);
      }
    }
  }
}

}  // namespace xfbench::transfer
