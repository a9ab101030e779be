// The language model's construction, parameters, data and read-back (language_model.hpp); the
// step itself is in language_model_step.cu.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <type_traits>

#include "kernels/adamw.hpp"
#include "kernels/layernorm.hpp"
#include "kernels/models/detail/language_model_impl.hpp"
#include "kernels/models/reference/language_model_ref.hpp"
#include "kernels/philox.hpp"
#include "xfbench/memory.hpp"

namespace xfbench::kernels {
namespace {

// A tensor-parallel rank's shard of a parameter (TpSplit; not split: the whole one).
struct Shard {
  TpSplit split;
  int rank = 0, size = 1;
};

// p[i] = lo + (hi - lo)·u, u uniform in [0, 1) from Philox(counter j, key seed), j the whole
// tensor's index of element i: the same values for any launch configuration, and a
// tensor-parallel rank's shard holds the one-GPU model's values.
template <class T>
__global__ void fill_uniform_kernel(T* p, std::size_t n, std::uint64_t seed, float lo, float hi,
                                    Shard shard) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const std::size_t j = shard.split.whole_index(i, shard.rank, shard.size);
    const detail::Philox4 r =
        detail::philox4x32_10({std::uint32_t(j), std::uint32_t(j >> 32), 0x7a11u, 0u},
                              std::uint32_t(seed), std::uint32_t(seed >> 32));
    p[i] = T(lo + (hi - lo) * float(r.x >> 8) * 0x1.0p-24f);
  }
}

template <class T>
void fill_uniform(T* p, std::size_t n, std::uint64_t seed, float lo, float hi, const Shard& shard,
                  cudaStream_t s) {
  if (n == 0) return;
  const int blocks = int(std::min<std::size_t>((n + 255) / 256, 4096));
  fill_uniform_kernel<T><<<blocks, 256, 0, s>>>(p, n, seed, lo, hi, shard);
  XF_CUDA_CHECK_LAUNCH();
}

std::string gb(std::size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GB", bytes / 1e9);
  return buf;
}

}  // namespace

DeviceAllocation::DeviceAllocation(std::size_t bytes, const std::string& what) : bytes(bytes) {
  if (bytes == 0) return;
  if (cudaMalloc(&p, bytes) != cudaSuccess) {
    cudaGetLastError();
    std::size_t free = 0, total = 0;
    cudaMemGetInfo(&free, &total);
    XF_THROW(Unsupported,
             "out of memory allocating " + what + " (" + gb(bytes) + ", " + gb(free) + " free)");
  }
}
DeviceAllocation::~DeviceAllocation() {
  if (p) cudaFree(p);
}

MemoryPlan LanguageModel::plan_memory(const TrainConfig& c) {
  check_train_config(c);
  return detail::make_layout(c, detail::probe_block_tensors(c.block()), detail::device_sizes(c))
      .plan;
}

LanguageModel::LanguageModel(const TrainConfig& config) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.c = config;
  check_train_config(config);
  const TrainConfig& c = m.c;
  m.layout =
      detail::make_layout(c, detail::probe_block_tensors(c.block()), detail::device_sizes(c));
  std::size_t free = 0, total = 0;
  XF_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  if (m.layout.plan.total() > free)
    XF_THROW(Unsupported, "out of memory: needs ~" + gb(m.layout.plan.total()) + ", " + gb(free) +
                              " free (" + c.describe() +
                              "); try a smaller batch, checkpointing (ckpt:on) or accumulation " +
                              "(accum:N with batch/N)");

  const std::size_t P = m.layout.sharded.stored_elements(m.layout.param_elements), e = m.elem();
  m.params = DeviceAllocation(P * e, "parameters");
  m.grads = DeviceAllocation(P * e, "gradients");
  if (c.shard_weights) {
    m.windows = std::make_unique<LayerWindows>();
    LayerWindows& w = *m.windows;
    const std::size_t G = m.layout.sharded.group * e;
    w.memory = DeviceAllocation(4 * G, "ZeRO-3 layer windows");
    XF_CUDA_CHECK(cudaMemset(w.memory.p, 0, 4 * G));
    for (int i = 0; i < 2; ++i) {
      w.weights[i] = static_cast<char*>(w.memory.p) + i * G;
      w.grads[i] = static_cast<char*>(w.memory.p) + (2 + i) * G;
      for (cudaEvent_t* ev :
           {&w.weights_ready[i], &w.weights_free[i], &w.grads_ready[i], &w.grads_free[i]})
        XF_CUDA_CHECK(cudaEventCreateWithFlags(ev, cudaEventDisableTiming));
    }
    XF_CUDA_CHECK(cudaEventCreateWithFlags(&w.collectives_done, cudaEventDisableTiming));
  }
  if (c.accum > 1) m.accum_grads = DeviceAllocation(P * e, "gradient accumulation");
  if (!c.shard_optimizer)  // ZeRO-2: the data-parallel trainer holds a shard of AdamW's state
    m.master = m.weights_are_master() ? DeviceAllocation(2 * P * 4, "AdamW moments")
                                      : DeviceAllocation(3 * P * 4, "master weights and moments");
  m.arena = DeviceAllocation(m.layout.arena_bytes, "activations");
  // Gaps between segments stay zero: the norm runs over the whole gradient buffer.
  XF_CUDA_CHECK(cudaMemset(m.params.p, 0, P * e));
  XF_CUDA_CHECK(cudaMemset(m.grads.p, 0, P * e));
  if (c.accum > 1) XF_CUDA_CHECK(cudaMemset(m.accum_grads.p, 0, P * e));

  for (int i = 0; i < c.model.layers; ++i) {
    BlockConfig bc = c.block();
    bc.dropout_seed = m.dropout_seed(i);
    m.blocks.push_back(std::make_unique<TransformerBlock>(
        bc, BlockPart::layer, [&m, i](const std::string& name, TensorRole role, std::size_t bytes) {
          return m.place(i, name, role, bytes);
        }));
  }
  std::vector<ParamSegment> segments;
  for (const detail::ParamSlot& p : m.layout.params)
    segments.push_back({p.offset, p.elements, p.decay});
  m.adamw = std::make_unique<AdamWPlan>(std::move(segments));
  m.make_head_plans();
}

LayerWindows::~LayerWindows() {
  for (int i = 0; i < 2; ++i)
    for (cudaEvent_t e : {weights_ready[i], weights_free[i], grads_ready[i], grads_free[i]})
      if (e) cudaEventDestroy(e);
  if (collectives_done) cudaEventDestroy(collectives_done);
}

LanguageModel::~LanguageModel() = default;

void LanguageModel::set_layer_collectives(const LayerCollectives& collectives) {
  if (!impl_->windows)
    XF_THROW(InvalidArgument, "language model: layer collectives without sharded weights");
  impl_->windows->collectives = collectives;
}

const TrainConfig& LanguageModel::config() const { return impl_->c; }
const MemoryPlan& LanguageModel::memory_plan() const { return impl_->layout.plan; }
void LanguageModel::set_learning_rate(float lr) { impl_->c.adamw.lr = lr; }

void* LanguageModel::Impl::place(int layer, const std::string& name, TensorRole role,
                                 std::size_t bytes) {
  const std::string prefix = ref::layer_parameter(layer, "");
  if (windows && (role == TensorRole::parameter || role == TensorRole::gradient)) {
    // ZeRO-3: in the layer's windows, at the tensor's place in its group
    const std::string flat = prefix + (role == TensorRole::parameter ? name : name.substr(1));
    const std::size_t at = layout.param(flat).offset - layout.sharded.begin -
                           std::size_t(layer) * layout.sharded.group;
    void* base =
        role == TensorRole::parameter ? windows->weights[layer % 2] : windows->grads[layer % 2];
    return static_cast<char*>(base) + at * elem();
  }
  if (role == TensorRole::parameter) return param(prefix + name);
  if (role == TensorRole::gradient) return grad(prefix + name.substr(1));
  const std::string key =
      detail::arena_key(layer, c.model.layers, c.checkpointing, {name, role, bytes});
  const detail::ArenaSlot& s = layout.slot(key);
  if (s.bytes < bytes)
    XF_THROW(InvalidArgument, "language model: " + key + " planned " + std::to_string(s.bytes) +
                                  " bytes, the block asks " + std::to_string(bytes));
  return static_cast<char*>(arena.p) + s.offset;
}

void* LanguageModel::Impl::param(const std::string& name) const {
  return static_cast<char*>(params.p) + layout.sharded.stored(layout.param(name).offset) * elem();
}
void* LanguageModel::Impl::grad(const std::string& name) const {
  return static_cast<char*>(grads.p) + layout.sharded.stored(layout.param(name).offset) * elem();
}
void* LanguageModel::Impl::chunk(void* base, int layer) const {
  const ShardedRegion& z = layout.sharded;
  const std::size_t first =
      z.begin + std::size_t(layer) * z.group + std::size_t(z.rank) * z.chunk();
  return static_cast<char*>(base) + z.stored(first) * elem();
}
void* LanguageModel::Impl::buf(const std::string& key) const {
  return static_cast<char*>(arena.p) + layout.slot(key).offset;
}
std::uint64_t LanguageModel::Impl::dropout_seed(int site) const {
  return c.seed * 0x9E3779B97F4A7C15ULL + std::uint64_t(site) + 1;
}

void LanguageModel::init_parameters(std::uint64_t seed, bool random_all) {
  Impl& m = *impl_;
  const float a = kInitStd * std::sqrt(3.f);  // uniform(-a, a) has normal(0, 0.02)'s spread
  const BlockConfig block = m.c.block();
  const ShardedRegion& z = m.layout.sharded;
  auto fill = [&](auto* typed) {
    using T = std::remove_pointer_t<decltype(typed)>;
    int filling = -1;  // ZeRO-3: the layer being filled in weight window 0, its chunk copied out
    auto copy_chunk = [&] {
      if (filling < 0) return;
      const std::size_t at = std::size_t(z.rank) * z.chunk() * sizeof(T);
      XF_CUDA_CHECK(cudaMemcpy(m.chunk(m.params.p, filling),
                               static_cast<char*>(m.windows->weights[0]) + at,
                               z.chunk() * sizeof(T), cudaMemcpyDeviceToDevice));
      filling = -1;
    };
    for (const detail::ParamSlot& p : m.layout.params) {
      const bool windowed = m.windows && p.offset >= z.begin && p.offset < z.end;
      const int in_layer = windowed ? int((p.offset - z.begin) / z.group) : -1;
      if (in_layer != filling) copy_chunk();
      if (windowed && filling < 0) {  // a fresh window: its gaps zero, as the flat buffers'
        XF_CUDA_CHECK(cudaMemset(m.windows->weights[0], 0, z.group * sizeof(T)));
        filling = in_layer;
      }
      T* dst = windowed ? static_cast<T*>(m.windows->weights[0]) +
                              (p.offset - z.begin - std::size_t(in_layer) * z.group)
                        : static_cast<T*>(m.param(p.name));
      const std::uint64_t s = seed * 1000003 + p.order;
      const bool layer = p.name.compare(0, 5, "layer") == 0;
      const std::string local = p.name.substr(p.name.find('.') + 1);
      const bool split = layer && m.c.tp_size > 1;
      const Shard shard{split ? tp_split(block, local) : TpSplit{}, m.c.tp_rank, m.c.tp_size};
      const bool norm_weight = local.find("ln") != std::string::npos && local.back() == 'w';
      if (p.decay)
        fill_uniform(dst, p.used, s, -a, a, shard, nullptr);
      else if (random_all)
        fill_uniform(dst, p.used, s, norm_weight ? 0.9f : -0.1f, norm_weight ? 1.1f : 0.1f, shard,
                     nullptr);
      else
        fill_uniform(dst, p.used, s, norm_weight ? 1.f : 0.f, norm_weight ? 1.f : 0.f, shard,
                     nullptr);
    }
    copy_chunk();
  };
  with_storage_type(m.c.precision, fill);
  for (auto& b : m.blocks) b->reset_fp8(nullptr);  // a fresh model's FP8 recipe too
  m.reset_optimizer(nullptr);
  XF_CUDA_CHECK(cudaDeviceSynchronize());
}

void LanguageModel::set_data(const std::vector<TokenBatch>& micro) {
  Impl& m = *impl_;
  const TrainConfig& c = m.c;
  if (int(micro.size()) != c.accum)
    XF_THROW(InvalidArgument, "language model: " + std::to_string(micro.size()) +
                                  " micro-batches given, accumulation takes " +
                                  std::to_string(c.accum));
  const int T = c.tokens(), R = c.head_rows();
  for (int k = 0; k < c.accum; ++k) {
    const TokenBatch& d = micro[k];
    if (d.batch != c.batch || d.seq != c.seq || int(d.head_rows.size()) != R)
      XF_THROW(InvalidArgument, "language model: a micro-batch of another shape");
    auto up = [&](const char* key, const std::vector<int>& v, int n) {
      XF_CUDA_CHECK(cudaMemcpy(static_cast<int*>(m.buf(key)) + std::size_t(k) * n, v.data(),
                               n * sizeof(int), cudaMemcpyHostToDevice));
    };
    up("emb.ids", d.ids, T);
    if (c.model.kind == LmKind::masked) up("emb.types", d.type_ids, T);
    up("head.rows", d.head_rows, R);
    up("head.targets", d.head_targets, R);
  }
}

float LanguageModel::loss(cudaStream_t s) const {
  float v = 0;
  XF_CUDA_CHECK(cudaMemcpyAsync(&v, impl_->buf("head.loss"), 4, cudaMemcpyDeviceToHost, s));
  XF_CUDA_CHECK(cudaStreamSynchronize(s));
  return v;
}

TrainScalars LanguageModel::scalars(cudaStream_t s) const {
  TrainScalars v{};
  XF_CUDA_CHECK(cudaMemcpyAsync(&v, impl_->buf("scalars"), sizeof v, cudaMemcpyDeviceToHost, s));
  XF_CUDA_CHECK(cudaStreamSynchronize(s));
  return v;
}

std::vector<std::string> LanguageModel::parameters() const {
  std::vector<std::string> out;
  for (const detail::ParamSlot& p : impl_->layout.params) out.push_back(p.name);
  return out;
}

std::size_t LanguageModel::parameter_count() const {
  std::size_t n = 0;
  for (const detail::ParamSlot& p : impl_->layout.params) n += p.elements;
  return n;
}

std::vector<std::size_t> LanguageModel::gradient_ready_offsets() const {
  const std::vector<std::size_t>& g = impl_->layout.groups;  // embeddings, layers, head
  return std::vector<std::size_t>(g.rbegin(), g.rend());
}

LanguageModel::Flat LanguageModel::flat() const {
  const Impl& m = *impl_;
  Flat f;
  f.params = m.params.p;
  f.grads = m.final_grads();
  f.elements = m.layout.param_elements;
  f.element_bytes = m.elem();
  f.segments = m.adamw->segments();
  f.tp_split = m.layout.tp_split_elements;
  f.sharded = m.layout.sharded;
  if (!m.c.shard_optimizer) f.master = m.master_weights();
  f.scalars = m.scalars();
  f.norm_scratch = static_cast<float*>(m.buf("grad_norm_scratch"));
  if (m.c.optimizer == OptimizerKind::unfused) f.adamw_scratch = m.buf("adamw_scratch");
  f.loss_scaling = m.loss_scaling();
  return f;
}

std::vector<double> LanguageModel::download(const std::string& name, Values which,
                                            cudaStream_t s) const {
  const Impl& m = *impl_;
  const detail::ParamSlot& p = m.layout.param(name);
  XF_CUDA_CHECK(cudaStreamSynchronize(s));
  const ShardedRegion& z = m.layout.sharded;
  if (p.offset >= z.begin && p.offset < z.end)
    XF_THROW(InvalidArgument, "language model: " + name + " is sharded over the ranks (ZeRO-3)");
  if (which == Values::master && m.c.shard_optimizer && !m.weights_are_master())
    XF_THROW(InvalidArgument, "language model: the master weights are sharded (ZeRO-2)");
  if (which == Values::master)
    return download_as_double(m.master_weights() + z.stored(p.offset), p.used, ElemType::f32, s);
  const void* src = which == Values::weights ? m.param(name)
                                             : static_cast<const char*>(m.final_grads()) +
                                                   m.layout.sharded.stored(p.offset) * m.elem();
  std::vector<double> out = download_as_double(src, p.used, storage_type(m.c.precision), s);
  if (which == Values::gradients) {
    const float scale = scalars(s).loss_scale;
    for (double& v : out) v /= scale;
  }
  return out;
}

}  // namespace xfbench::kernels
