#include "parallel_trainer.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <type_traits>

#include "kernels/adamw.hpp"
#include "kernels/comm/nccl_comm.hpp"
#include "kernels/grad_norm.hpp"
#include "tensor_parallel.hpp"
#include "xfbench/memory.hpp"
#define XFBENCH_USE_NCCL
#include "xfbench/check_libs.hpp"

namespace xfbench::train {

using kernels::LanguageModel;

namespace {

cudaEvent_t new_event(bool timing) {
  cudaEvent_t e = nullptr;
  XF_CUDA_CHECK(cudaEventCreateWithFlags(&e, timing ? cudaEventDefault : cudaEventDisableTiming));
  return e;
}

// Calls f with a null T* of the step's storage type (as LanguageModel stores it).
template <class F>
void with_type(kernels::Precision p, const F& f) {
  if (p == kernels::Precision::fp16)
    f(static_cast<__half*>(nullptr));
  else if (p == kernels::Precision::bf16)
    f(static_cast<__nv_bfloat16*>(nullptr));
  else
    f(static_cast<float*>(nullptr));
}

template <class T>
T* at(void* base, std::size_t elements) {
  return static_cast<T*>(base) + elements;
}

// zero3: a layer's weights all-gathered into its window, its gradients reduce-scattered (mean)
// into this rank's chunk; timed into `times` while it is on (measure_overlap).
LanguageModel::LayerCollectives layer_collectives(ncclComm_t comm, ncclDataType_t type,
                                                  ReduceTimes* times, cudaStream_t stream) {
  LanguageModel::LayerCollectives c;
  c.stream = stream;
  auto timed = [times](cudaStream_t s, const std::function<void()>& call) {
    const bool on = times->on();
    if (on) XF_CUDA_CHECK(cudaEventRecord(times->next(), s));
    call();
    if (on) XF_CUDA_CHECK(cudaEventRecord(times->next(), s));
  };
  c.gather = [=](void* window, const void* mine, std::size_t n, cudaStream_t s) {
    timed(s, [&] { XF_NCCL_CHECK(ncclAllGather(mine, window, n, type, comm, s)); });
  };
  c.scatter = [=](void* mine, const void* window, std::size_t n, cudaStream_t s) {
    timed(s, [&] { XF_NCCL_CHECK(ncclReduceScatter(window, mine, n, type, ncclAvg, comm, s)); });
  };
  return c;
}

// What `mode` shards of the model: zero2 AdamW's state, zero3 the layers' weights and gradients
// too.
void set_sharding(kernels::TrainConfig& c, Parallelism mode) {
  c.shard_optimizer = mode == Parallelism::zero2 || mode == Parallelism::zero3;
  c.shard_weights = mode == Parallelism::zero3;
}

}  // namespace

const char* to_string(Parallelism p) {
  switch (p) {
    case Parallelism::dp:
      return "dp";
    case Parallelism::zero2:
      return "zero2";
    case Parallelism::zero3:
      return "zero3";
    default:
      return "tp";
  }
}

kernels::TrainConfig parallel_config(kernels::TrainConfig c, Parallelism mode, int gpus) {
  (mode == Parallelism::tp ? c.tp_size : c.ranks) = gpus;
  set_sharding(c, mode);
  return c;
}

double ParallelTrainer::Overlap::hidden_pct() const {
  if (comm_ms <= 0) return 100;
  return std::clamp(100 * (1 - exposed_ms / comm_ms), 0.0, 100.0);
}

// One local GPU: its model, streams, events and (zero2) its shard of the optimizer.
struct ParallelTrainer::Rank {
  int device = 0, rank = 0;
  ncclComm_t comm = nullptr;
  std::unique_ptr<LanguageModel> model;
  LanguageModel::Flat flat;
  cudaStream_t compute = nullptr, communicate = nullptr;
  cudaEvent_t start = nullptr, comm_done = nullptr, done = nullptr;  // of the rank's step
  std::vector<cudaEvent_t> ready;  // per bucket: its gradients are final
  // zero2: the rank's chunks are reduced, updated and gathered in place in the flat buffers;
  // shard_state holds their fp32 master weights (unless the weights are fp32: then the chunks of
  // the flat weights are the master) and moments, chunk after chunk (Bucket::shard_offset).
  DeviceMemory shard_state;
  std::unique_ptr<kernels::GradPieces> shard_pieces;  // the chunks, for the gradient norm
  std::vector<kernels::AdamWPlan> chunk_plans;        // per bucket, offsets from its chunk
  ReduceTimes reduce_times;  // tp: the blocks' all-reduces, zero3: the layers' collectives

  ~Rank() {
    OnDevice on(device);
    chunk_plans.clear();
    shard_pieces.reset();
    model.reset();
    for (cudaEvent_t e : ready) cudaEventDestroy(e);
    for (cudaEvent_t e : {start, comm_done, done})
      if (e) cudaEventDestroy(e);
    for (cudaStream_t s : {compute, communicate})
      if (s) cudaStreamDestroy(s);
    shard_state = DeviceMemory();
  }
  bool weights_are_master() const { return flat.element_bytes == 4; }
  // Rank r's chunk of bucket b in the stored flat buffer `base` (params or grads; zero3 stores
  // the layers' chunks only: LanguageModel::Flat::sharded), and the bucket's whole.
  void* chunk(void* base, const BucketPlan& plan, const Bucket& b) const {
    return at<char>(base, flat.sharded.stored(plan.chunk_begin(b, rank)) * flat.element_bytes);
  }
  void* whole(void* base, const Bucket& b) const {
    return at<char>(base, flat.sharded.stored(b.begin) * flat.element_bytes);
  }
  bool sharded(const Bucket& b) const {  // zero3: a layer's, reduced and gathered by the model
    return b.begin >= flat.sharded.begin && b.begin < flat.sharded.end;
  }
  // zero2: the fp32 master weights of bucket b's chunk, and its first moment (the second at +S).
  float* master(const BucketPlan& plan, const Bucket& b) const {
    return weights_are_master() ? static_cast<float*>(chunk(flat.params, plan, b))
                                : at<float>(shard_state.get(), b.shard_offset);
  }
  float* moment1(const BucketPlan& plan, const Bucket& b) const {
    return at<float>(shard_state.get(),
                     (weights_are_master() ? 0 : plan.shard_elements) + b.shard_offset);
  }
};

struct ParallelTrainer::Impl {
  kernels::TrainConfig c;
  Parallelism mode = Parallelism::dp;
  int nranks = 1;
  BucketPlan plan;
  std::vector<std::unique_ptr<Rank>> ranks;
  cudaEvent_t fork = nullptr;  // on the caller's stream, first local device
  int first_device = 0;

  // Timing events of measure_overlap (first local rank): per bucket around its collective.
  std::vector<cudaEvent_t> comm_begin, comm_end;
  cudaEvent_t backward_end = nullptr;
  bool timing = false;
  // One host thread per local rank: one thread enqueueing every rank's thousands of launches per
  // step would start the later ranks late, and each collective waits for the last rank.
  std::unique_ptr<kernels::RankThreads> threads;

  // f(rank) on every local rank's thread with its device current; returns when all have.
  void each_rank(const std::function<void(Rank&)>& f) {
    threads->run([&](int i) { f(*ranks[i]); });
  }
  // f(rank) enqueues on the rank's compute stream, after the work on `stream`, which then waits
  // for every rank.
  void on_compute_streams(cudaStream_t stream, const std::function<void(Rank&)>& f) {
    {
      OnDevice on(first_device);
      XF_CUDA_CHECK(cudaEventRecord(fork, stream));
    }
    each_rank([&](Rank& r) {
      XF_CUDA_CHECK(cudaStreamWaitEvent(r.compute, fork, 0));
      f(r);
      XF_CUDA_CHECK(cudaEventRecord(r.done, r.compute));
    });
    OnDevice on(first_device);
    for (auto& r : ranks) XF_CUDA_CHECK(cudaStreamWaitEvent(stream, r->done, 0));
  }

  void rank_step(Rank& r);
  void reduce_buckets(Rank& r, bool timed);
  void zero2_update(Rank& r);
};

ParallelTrainer::ParallelTrainer(const kernels::TrainConfig& config, Parallelism mode,
                                 const std::vector<int>& devices, std::size_t bucket_bytes)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.c = config;
  m.mode = mode;
  set_sharding(m.c, mode);
  if (devices.empty()) XF_THROW(InvalidArgument, "parallel trainer: no devices");
  kernels::Communicator& comm = kernels::communicator(devices);
  m.nranks = comm.nranks;
  const bool tp = mode == Parallelism::tp;
  if ((tp ? m.c.tp_size : m.c.ranks) != m.nranks || (tp && m.c.ranks != 1))
    XF_THROW(InvalidArgument, "parallel trainer: the configuration says " +
                                  std::to_string(m.c.ranks) + " ranks and tensor-parallel size " +
                                  std::to_string(m.c.tp_size) + ", " + to_string(mode) +
                                  " has the communicator's " + std::to_string(m.nranks) +
                                  " (parallel_config)");
  m.first_device = devices.front();
  for (std::size_t i = 0; i < devices.size(); ++i) {
    auto r = std::make_unique<Rank>();
    r->device = devices[i];
    r->rank = comm.ranks[i];
    r->comm = comm.comms[i];
    OnDevice on(r->device);
    kernels::TrainConfig rc = m.c;
    if (tp)
      rc.tp_rank = r->rank, rc.tp_reduce = nccl_tp_reduce(r->comm, &r->reduce_times);
    else
      rc.rank = r->rank;
    r->model = std::make_unique<LanguageModel>(rc);
    r->flat = r->model->flat();
    XF_CUDA_CHECK(cudaStreamCreateWithFlags(&r->compute, cudaStreamNonBlocking));
    XF_CUDA_CHECK(cudaStreamCreateWithFlags(&r->communicate, cudaStreamNonBlocking));
    if (m.c.shard_weights)
      r->model->set_layer_collectives(
          layer_collectives(r->comm, kernels::nccl_type(kernels::storage_type(m.c.precision)),
                            &r->reduce_times, r->communicate));
    r->start = new_event(false), r->comm_done = new_event(false), r->done = new_event(false);
    m.ranks.push_back(std::move(r));
  }
  Rank& first = *m.ranks.front();
  const std::size_t element_bytes = first.flat.element_bytes;
  m.threads = std::make_unique<kernels::RankThreads>(devices);
  // tp reduces inside the blocks: no buckets; zero3 one bucket a parameter group (a layer's is
  // its window's)
  const std::size_t bucket_elements =
      m.c.shard_weights ? 1 : std::max<std::size_t>(bucket_bytes / element_bytes, 1);
  if (!tp)
    m.plan = plan_buckets(first.model->gradient_ready_offsets(), first.flat.elements, m.nranks,
                          bucket_elements);
  for (auto& r : m.ranks) {
    OnDevice on(r->device);
    for (std::size_t b = 0; b < m.plan.buckets.size(); ++b) r->ready.push_back(new_event(false));
    if (!m.c.shard_optimizer) continue;
    const std::size_t S = m.plan.shard_elements;
    r->shard_state = DeviceMemory((r->weights_are_master() ? 2 : 3) * S * sizeof(float));
    std::vector<kernels::GradPieces::Piece> pieces = m.plan.shard_pieces(r->rank);
    for (kernels::GradPieces::Piece& p : pieces) p.offset = r->flat.sharded.stored(p.offset);
    r->shard_pieces = std::make_unique<kernels::GradPieces>(pieces);
    for (auto& segments : m.plan.chunk_segments(r->flat.segments, r->rank))
      r->chunk_plans.emplace_back(std::move(segments));
  }
  {
    OnDevice on(m.first_device);
    m.fork = new_event(false);
    m.backward_end = new_event(true);
    for (std::size_t b = 0; b < m.plan.buckets.size(); ++b) {
      m.comm_begin.push_back(new_event(true));
      m.comm_end.push_back(new_event(true));
    }
  }
}

ParallelTrainer::~ParallelTrainer() {
  Impl& m = *impl_;
  m.threads.reset();
  m.ranks.clear();
  OnDevice on(m.first_device);
  for (cudaEvent_t e : m.comm_begin) cudaEventDestroy(e);
  for (cudaEvent_t e : m.comm_end) cudaEventDestroy(e);
  if (m.backward_end) cudaEventDestroy(m.backward_end);
  if (m.fork) cudaEventDestroy(m.fork);
}

Parallelism ParallelTrainer::mode() const { return impl_->mode; }
int ParallelTrainer::ranks() const { return impl_->nranks; }
int ParallelTrainer::local_ranks() const { return int(impl_->ranks.size()); }
int ParallelTrainer::rank(int local) const { return impl_->ranks.at(local)->rank; }
int ParallelTrainer::device(int local) const { return impl_->ranks.at(local)->device; }
int ParallelTrainer::data_rank(int local) const {
  return impl_->mode == Parallelism::tp ? 0 : rank(local);
}
LanguageModel& ParallelTrainer::model(int local) { return *impl_->ranks.at(local)->model; }
const BucketPlan& ParallelTrainer::buckets() const { return impl_->plan; }

void ParallelTrainer::init_parameters(std::uint64_t seed) {
  Impl& m = *impl_;
  const std::size_t S = m.plan.shard_elements;
  for (auto& r : m.ranks) {
    OnDevice on(r->device);
    r->model->init_parameters(seed);
    if (!m.c.shard_optimizer) continue;
    if (!r->weights_are_master())  // the master of each chunk from its weights
      with_type(m.c.precision, [&](auto* tag) {
        using T = std::remove_pointer_t<decltype(tag)>;
        for (const Bucket& b : m.plan.buckets)
          kernels::adamw_init_master<T>(r->master(m.plan, b),
                                        static_cast<const T*>(r->chunk(r->flat.params, m.plan, b)),
                                        b.chunk, nullptr);
      });
    float* moments = at<float>(r->shard_state.get(), r->weights_are_master() ? 0 : S);
    XF_CUDA_CHECK(cudaMemset(moments, 0, 2 * S * sizeof(float)));
    XF_CUDA_CHECK(cudaDeviceSynchronize());
  }
}

void ParallelTrainer::set_data(int local, const std::vector<kernels::TokenBatch>& micro) {
  Rank& r = *impl_->ranks.at(local);
  OnDevice on(r.device);
  r.model->set_data(micro);
}

void ParallelTrainer::tune() {
  impl_->each_rank([](Rank& r) { r.model->tune(); });
}

// Rank r's bucket by bucket, each once r's backward has finished it: all-reduced (dp) or
// reduce-scattered in place, r's chunk reduced where it lies (zero2), averaged, on r's
// communication stream; NCCL matches them with the other ranks' calls on their threads.
void ParallelTrainer::Impl::reduce_buckets(Rank& r, bool timed) {
  const ncclDataType_t type = kernels::nccl_type(kernels::storage_type(c.precision));
  const std::size_t e = r.flat.element_bytes;
  for (std::size_t b = 0; b < plan.buckets.size(); ++b) {
    const Bucket& k = plan.buckets[b];
    if (r.sharded(k)) continue;  // zero3: the model scattered it from its window
    XF_CUDA_CHECK(cudaStreamWaitEvent(r.communicate, r.ready[b], 0));
    if (timed) XF_CUDA_CHECK(cudaEventRecord(comm_begin[b], r.communicate));
    void* bucket = r.whole(r.flat.grads, k);
    if (mode == Parallelism::dp)
      XF_NCCL_CHECK(
          ncclAllReduce(bucket, bucket, k.end - k.begin, type, ncclAvg, r.comm, r.communicate));
    else
      XF_NCCL_CHECK(ncclReduceScatter(bucket, r.chunk(r.flat.grads, plan, k), k.chunk, type,
                                      ncclAvg, r.comm, r.communicate));
    if (timed) XF_CUDA_CHECK(cudaEventRecord(comm_end[b], r.communicate));
  }
}

// zero2 after rank r's reduce-scatters, on its communication stream: the global norm from the
// ranks' partial sums, clipping, AdamW on each of r's chunks, the weights all-gathered in place.
void ParallelTrainer::Impl::zero2_update(Rank& r) {
  const std::size_t S = plan.shard_elements;
  const kernels::AdamWConfig config{c.adamw.lr, c.adamw.beta1, c.adamw.beta2, c.adamw.eps,
                                    c.adamw.weight_decay};
  const std::size_t partials = kernels::grad_norm_scratch_bytes() / sizeof(float);
  with_type(c.precision, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    kernels::grad_norm_partials<T>(r.flat.norm_scratch, static_cast<const T*>(r.flat.grads),
                                   *r.shard_pieces, r.communicate);
  });
  XF_NCCL_CHECK(ncclAllReduce(r.flat.norm_scratch, r.flat.norm_scratch, partials, ncclFloat32,
                              ncclSum, r.comm, r.communicate));
  kernels::grad_norm_finish(r.flat.scalars, r.flat.norm_scratch, c.max_grad_norm,
                            r.flat.loss_scaling, r.communicate);
  with_type(c.precision, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    for (std::size_t i = 0; i < plan.buckets.size(); ++i) {
      const Bucket& b = plan.buckets[i];
      const kernels::AdamWPlan& chunk = r.chunk_plans[i];
      if (chunk.num_pieces() == 0) continue;  // padding only
      T* weights =
          r.weights_are_master() ? nullptr : static_cast<T*>(r.chunk(r.flat.params, plan, b));
      const T* grads = static_cast<const T*>(r.chunk(r.flat.grads, plan, b));
      float *master = r.master(plan, b), *m1 = r.moment1(plan, b), *m2 = m1 + S;
      if (c.optimizer == kernels::OptimizerKind::fused)
        kernels::adamw_fused<T>(weights, master, m1, m2, grads, chunk, config, r.flat.scalars,
                                r.communicate);
      else
        kernels::adamw_unfused<T>(weights, master, m1, m2, grads, r.flat.adamw_scratch, chunk,
                                  config, r.flat.scalars, r.communicate);
    }
  });
  // The weights all-gathered in place (zero3: the layers' stay chunks, gathered when used).
  const ncclDataType_t type = kernels::nccl_type(kernels::storage_type(c.precision));
  XF_NCCL_CHECK(ncclGroupStart());  // one launch for all the buckets' gathers
  for (const Bucket& k : plan.buckets)
    if (!r.sharded(k))
      XF_NCCL_CHECK(ncclAllGather(r.chunk(r.flat.params, plan, k), r.whole(r.flat.params, k),
                                  k.chunk, type, r.comm, r.communicate));
  XF_NCCL_CHECK(ncclGroupEnd());
}

// dp and zero2, rank r's step on its thread, its compute stream already after the caller's work:
// forward and backward recording each bucket's event, the buckets' collectives as they become
// ready, then zero2's update or dp's optimizer step.
void ParallelTrainer::Impl::rank_step(Rank& r) {
  const bool timed = timing && &r == ranks.front().get();
  XF_CUDA_CHECK(cudaEventRecord(r.start, r.compute));
  XF_CUDA_CHECK(cudaStreamWaitEvent(r.communicate, r.start, 0));
  r.model->compute_gradients(r.compute, [&](int point) {
    for (std::size_t b = 0; b < plan.buckets.size(); ++b)
      if (plan.buckets[b].ready_point == point)
        XF_CUDA_CHECK(cudaEventRecord(r.ready[b], r.compute));
  });
  if (timed) XF_CUDA_CHECK(cudaEventRecord(backward_end, r.compute));
  reduce_buckets(r, timed);
  if (c.shard_optimizer) zero2_update(r);
  XF_CUDA_CHECK(cudaEventRecord(r.comm_done, r.communicate));
  XF_CUDA_CHECK(cudaStreamWaitEvent(r.compute, r.comm_done, 0));
  if (mode == Parallelism::dp) r.model->optimizer_step(r.compute);
}

void ParallelTrainer::compute_gradients(cudaStream_t stream) {
  impl_->on_compute_streams(stream, [](Rank& r) { r.model->compute_gradients(r.compute); });
}

void ParallelTrainer::step(cudaStream_t stream) {
  Impl& m = *impl_;
  if (m.mode == Parallelism::tp)  // the blocks reduce, the norm adds the ranks' parts
    return m.on_compute_streams(stream, [](Rank& r) { r.model->step(r.compute); });
  m.on_compute_streams(stream, [&m](Rank& r) { m.rank_step(r); });
}

ParallelTrainer::Overlap ParallelTrainer::measure_overlap(cudaStream_t stream) {
  Impl& m = *impl_;
  if (m.mode == Parallelism::tp) {
    ReduceTimes& times = m.ranks.front()->reduce_times;
    times.start();
    try {
      step(stream);
    } catch (...) {
      times.stop();
      throw;
    }
    times.stop();
    OnDevice on(m.first_device);
    kernels::wait_for_stream(stream);
    Overlap o;
    o.comm_ms = o.exposed_ms = times.total_ms();  // on the compute stream: none hidden
    return o;
  }
  ReduceTimes& layers = m.ranks.front()->reduce_times;  // zero3's, in the model's step
  m.timing = true;
  layers.start();
  try {
    step(stream);
  } catch (...) {
    m.timing = false;
    layers.stop();
    throw;
  }
  m.timing = false;
  layers.stop();
  OnDevice on(m.first_device);
  kernels::wait_for_stream(stream);
  Overlap o;
  o.comm_ms = layers.total_ms();
  float ms = 0;
  const Rank& first = *m.ranks.front();
  for (std::size_t b = 0; b < m.plan.buckets.size(); ++b) {
    if (first.sharded(m.plan.buckets[b])) continue;  // zero3: timed as the layers'
    XF_CUDA_CHECK(cudaEventElapsedTime(&ms, m.comm_begin[b], m.comm_end[b]));
    o.comm_ms += ms;
  }
  if (!m.comm_end.empty()) {  // the last bucket (the embeddings') is never a layer's
    XF_CUDA_CHECK(cudaEventElapsedTime(&ms, m.backward_end, m.comm_end.back()));
    o.exposed_ms = std::max(0.f, ms);
  }
  return o;
}

void ParallelTrainer::visit_master(int local, const MasterVisitor& visit) const {
  const Impl& m = *impl_;
  const Rank& r = *m.ranks.at(local);
  OnDevice on(r.device);
  XF_CUDA_CHECK(cudaDeviceSynchronize());
  auto read = [&](const float* p, std::size_t n) {
    std::vector<float> v(n);
    XF_CUDA_CHECK(cudaMemcpy(v.data(), p, n * sizeof(float), cudaMemcpyDeviceToHost));
    return v;
  };
  if (!m.c.shard_optimizer) return visit(0, read(r.flat.master, r.flat.elements));
  for (auto b = m.plan.buckets.rbegin(); b != m.plan.buckets.rend(); ++b)
    visit(m.plan.chunk_begin(*b, r.rank), read(r.master(m.plan, *b), b->chunk));
}

std::vector<unsigned char> ParallelTrainer::weight_bytes(int local) const {
  const Rank& r = *impl_->ranks.at(local);
  OnDevice on(r.device);
  XF_CUDA_CHECK(cudaDeviceSynchronize());
  // zero3: the parts every rank stores whole (the layers' chunks differ by rank)
  const kernels::ShardedRegion& z = r.flat.sharded;
  const std::size_t e = r.flat.element_bytes, after = z.stored(z.end);
  const std::size_t head = z.begin, tail = z.stored_elements(r.flat.elements) - after;
  std::vector<unsigned char> out((head + tail) * e);
  XF_CUDA_CHECK(cudaMemcpy(out.data(), r.flat.params, head * e, cudaMemcpyDeviceToHost));
  XF_CUDA_CHECK(cudaMemcpy(out.data() + head * e, at<char>(r.flat.params, after * e), tail * e,
                           cudaMemcpyDeviceToHost));
  return out;
}

}  // namespace xfbench::train
