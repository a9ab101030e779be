// Fused attention through cuDNN's SDPA (flash attention) forward and backward, built with
// cudnn-frontend's graph API. The frontend stays inside this file: attention.hpp is all plugins
// see.
//
// Graphs are built once per (device, description, training) and cached process-wide; building
// (heuristics, plan compilation) happens in the CudnnAttention constructor, never in a timed run.
// One cuDNN handle per device, pointed at the caller's stream before each execution.
#define XFBENCH_USE_CUDNN
#include <cudnn_frontend.h>

#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <tuple>
#include <unordered_map>

#include "kernels/attention.hpp"
#include "xfbench/check_libs.hpp"

namespace xfbench::kernels {
namespace {

namespace fe = cudnn_frontend;

enum Uid : fe::graph::Tensor_attributes::uid_t {
  kQ = 1,
  kK,
  kV,
  kO,
  kStats,
  kBias,
  kSeqQ,
  kSeqKv,
  kSeed,
  kOffset,
  kDO,
  kDQ,
  kDK,
  kDV,
  kDBias
};

// Handles live until the process exits (destroying them during static teardown can outlive the
// CUDA context), one per device.
cudnnHandle_t handle_for_current_device() {
  static std::mutex mu;
  static std::map<int, cudnnHandle_t> handles;
  int dev = 0;
  XF_CUDA_CHECK(cudaGetDevice(&dev));
  std::lock_guard<std::mutex> lock(mu);
  auto it = handles.find(dev);
  if (it != handles.end()) return it->second;
  cudnnHandle_t h = nullptr;
  XF_CUDNN_CHECK(cudnnCreate(&h));
  handles[dev] = h;
  return h;
}

struct Graphs {
  std::shared_ptr<fe::graph::Graph> fwd, bwd;
  std::int64_t workspace = 0;
};

std::vector<std::int64_t> dims(int B, int NH, int S, int D) { return {B, NH, S, D}; }
std::vector<std::int64_t> strides(const HeadStrides& s) { return {s.b, s.h, s.s, 1}; }

fe::graph::Tensor_attributes tensor(const char* name, Uid uid, std::vector<std::int64_t> dim,
                                    std::vector<std::int64_t> stride) {
  return fe::graph::Tensor_attributes().set_name(name).set_uid(uid).set_dim(dim).set_stride(stride);
}

void check(fe::error_t e, const AttentionDesc& d, const char* step) {
  if (e.is_good()) return;
  std::ostringstream msg;
  msg << "cuDNN SDPA " << step << " for B=" << d.B << " NH=" << d.NH << " NKV=" << d.kv_heads()
      << " Sq=" << d.Sq << " Sk=" << d.Sk << " HD=" << d.HD << ": " << e.get_message();
  XF_THROW(Unsupported, msg.str());
}

// Inputs both graphs share: Q, K, V, and the optional mask, bias and dropout tensors.
struct Common {
  std::shared_ptr<fe::graph::Tensor_attributes> q, k, v, bias, seq_q, seq_kv, seed, offset;
};

Common add_inputs(fe::graph::Graph& g, const AttentionDesc& d) {
  Common c;
  c.q = g.tensor(tensor("Q", kQ, dims(d.B, d.NH, d.Sq, d.HD), strides(d.q)));
  // Grouped-query: K and V have NKV heads; cuDNN maps query head h to h / (NH / NKV).
  c.k = g.tensor(tensor("K", kK, dims(d.B, d.kv_heads(), d.Sk, d.HD), strides(d.k)));
  c.v = g.tensor(tensor("V", kV, dims(d.B, d.kv_heads(), d.Sk, d.HD), strides(d.v)));
  if (d.bias) {
    const std::int64_t ss = std::int64_t(d.Sq) * d.Sk;
    c.bias = g.tensor(tensor("bias", kBias, {1, d.NH, d.Sq, d.Sk}, {d.NH * ss, ss, d.Sk, 1}));
  }
  if (d.padding_mask) {
    auto len = [&](const char* name, Uid uid) {
      return g.tensor(
          tensor(name, uid, {d.B, 1, 1, 1}, {1, 1, 1, 1}).set_data_type(fe::DataType_t::INT32));
    };
    c.seq_q = len("seq_q", kSeqQ);
    c.seq_kv = len("seq_kv", kSeqKv);
  }
  if (d.dropout > 0.f) {
    auto scalar = [&](const char* name, Uid uid) {
      return g.tensor(tensor(name, uid, {1, 1, 1, 1}, {1, 1, 1, 1})
                          .set_data_type(fe::DataType_t::INT64)
                          .set_is_pass_by_value(true));
    };
    c.seed = scalar("seed", kSeed);
    c.offset = scalar("offset", kOffset);
  }
  return c;
}

template <class Attributes>
void set_options(Attributes& a, const AttentionDesc& d, const Common& c) {
  a.set_attn_scale(d.softmax_scale());
  if (d.causal) a.set_causal_mask(true);
  if (d.bias) a.set_bias(c.bias);
  if (d.padding_mask) a.set_padding_mask(true).set_seq_len_q(c.seq_q).set_seq_len_kv(c.seq_kv);
  if (d.dropout > 0.f) a.set_dropout(d.dropout, c.seed, c.offset);
}

std::shared_ptr<fe::graph::Graph> new_graph(const AttentionDesc& d) {
  auto g = std::make_shared<fe::graph::Graph>();
  g->set_io_data_type(d.precision == Precision::fp16 ? fe::DataType_t::HALF
                                                     : fe::DataType_t::BFLOAT16)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  return g;
}

std::shared_ptr<fe::graph::Tensor_attributes> stats_tensor(fe::graph::Graph& g,
                                                           const AttentionDesc& d) {
  return g.tensor(
      tensor("stats", kStats, {d.B, d.NH, d.Sq, 1}, {std::int64_t(d.NH) * d.Sq, d.Sq, 1, 1})
          .set_data_type(fe::DataType_t::FLOAT));
}

void build(fe::graph::Graph& g, cudnnHandle_t h, const AttentionDesc& d, const char* what) {
  check(g.validate(), d, what);
  check(g.build_operation_graph(h), d, what);
  check(g.create_execution_plans({fe::HeurMode_t::A}), d, what);
  check(g.check_support(h), d, what);
  check(g.build_plans(h), d, what);
}

std::shared_ptr<Graphs> build_graphs(const AttentionDesc& d, bool training) {
  cudnnHandle_t h = handle_for_current_device();
  auto out = std::make_shared<Graphs>();

  out->fwd = new_graph(d);
  {
    fe::graph::Graph& g = *out->fwd;
    Common c = add_inputs(g, d);
    auto opts = fe::graph::SDPA_attributes().set_name("sdpa").set_generate_stats(training);
    set_options(opts, d, c);
    auto [o, stats] = g.sdpa(c.q, c.k, c.v, opts);
    o->set_output(true).set_uid(kO).set_dim(dims(d.B, d.NH, d.Sq, d.HD)).set_stride(strides(d.o));
    if (training) stats->set_output(true).set_uid(kStats).set_data_type(fe::DataType_t::FLOAT);
    build(g, h, d, "forward");
  }
  std::int64_t ws = 0;
  check(out->fwd->get_workspace_size(ws), d, "forward workspace");
  out->workspace = ws;

  if (training) {
    out->bwd = new_graph(d);
    fe::graph::Graph& g = *out->bwd;
    Common c = add_inputs(g, d);
    auto o = g.tensor(tensor("O", kO, dims(d.B, d.NH, d.Sq, d.HD), strides(d.o)));
    auto dout = g.tensor(tensor("dO", kDO, dims(d.B, d.NH, d.Sq, d.HD), strides(d.o)));
    auto stats = stats_tensor(g, d);
    auto opts = fe::graph::SDPA_backward_attributes().set_name("sdpa_backward");
    set_options(opts, d, c);
    if (d.bias_grad) {  // [1, NH, Sq, Sk] as the bias: cuDNN reduces dS over the batch
      const std::int64_t ss = std::int64_t(d.Sq) * d.Sk;
      opts.set_dbias(
          g.tensor(tensor("dbias", kDBias, {1, d.NH, d.Sq, d.Sk}, {d.NH * ss, ss, d.Sk, 1})
                       .set_output(true)));
    }
    auto [dq, dk, dv] = g.sdpa_backward(c.q, c.k, c.v, o, dout, stats, opts);
    dq->set_output(true).set_uid(kDQ).set_dim(dims(d.B, d.NH, d.Sq, d.HD)).set_stride(strides(d.q));
    // With NKV < NH cuDNN sums the group's per-head dK, dV (its GQA reduction).
    dk->set_output(true)
        .set_uid(kDK)
        .set_dim(dims(d.B, d.kv_heads(), d.Sk, d.HD))
        .set_stride(strides(d.k));
    dv->set_output(true)
        .set_uid(kDV)
        .set_dim(dims(d.B, d.kv_heads(), d.Sk, d.HD))
        .set_stride(strides(d.v));
    build(g, h, d, "backward");
    check(g.get_workspace_size(ws), d, "backward workspace");
    out->workspace = std::max(out->workspace, ws);
  }
  return out;
}

std::string cache_key(const AttentionDesc& d, bool training) {
  int dev = 0;
  XF_CUDA_CHECK(cudaGetDevice(&dev));
  std::ostringstream k;
  k << dev << '|' << int(d.precision) << '|' << d.B << ',' << d.NH << ',' << d.kv_heads() << ','
    << d.Sq << ',' << d.Sk << ',' << d.HD;
  for (const HeadStrides* s : {&d.q, &d.k, &d.v, &d.o})
    k << '|' << s->b << ',' << s->h << ',' << s->s;
  k << '|' << d.softmax_scale() << '|' << d.causal << d.padding_mask << d.bias << d.bias_grad << '|'
    << d.dropout << '|' << training;
  return k.str();
}

std::shared_ptr<Graphs> cached_graphs(const AttentionDesc& d, bool training) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<Graphs>> cache;
  const std::string key = cache_key(d, training);
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
  }
  auto graphs = build_graphs(d, training);  // slow: outside the lock
  std::lock_guard<std::mutex> lock(mu);
  return cache.emplace(key, graphs).first->second;
}

}  // namespace

struct CudnnAttention::Impl {
  AttentionDesc d;
  bool training = true;
  std::shared_ptr<Graphs> graphs;
  int* q_lens = nullptr;  // device [B], all Sq: queries are never padded (HF semantics)

  ~Impl() {
    if (q_lens) cudaFree(q_lens);
  }

  void execute(fe::graph::Graph& g, std::unordered_map<std::int64_t, void*>& pack,
               const int* kv_lens, const void* bias, const Dropout& dropout, void* workspace,
               cudaStream_t stream, const char* what) const {
    if (dropout.p != d.dropout) XF_THROW(InvalidArgument, "cuDNN attention: dropout.p differs");
    if (d.padding_mask) {
      if (!kv_lens) XF_THROW(InvalidArgument, "cuDNN attention: kv_lens needed");
      pack[kSeqQ] = q_lens;
      pack[kSeqKv] = const_cast<int*>(kv_lens);
    }
    if (d.bias) {
      if (!bias) XF_THROW(InvalidArgument, "cuDNN attention: bias needed");
      pack[kBias] = const_cast<void*>(bias);
    }
    std::int64_t seed = static_cast<std::int64_t>(dropout.seed);
    std::int64_t offset = static_cast<std::int64_t>(dropout.offset);
    if (d.dropout > 0.f) {
      pack[kSeed] = &seed;  // pass-by-value scalars: read on the host during execute()
      pack[kOffset] = &offset;
    }
    if (graphs->workspace > 0 && !workspace)
      XF_THROW(InvalidArgument, "cuDNN attention: workspace needed");
    cudnnHandle_t h = handle_for_current_device();
    XF_CUDNN_CHECK(cudnnSetStream(h, stream));
    check(g.execute(h, pack, workspace), d, what);
  }
};

CudnnAttention::CudnnAttention(const AttentionDesc& desc, bool training)
    : impl_(std::make_shared<Impl>()) {
  if (desc.precision != Precision::fp16 && desc.precision != Precision::bf16)
    XF_THROW(InvalidArgument, "cuDNN attention: precision must be fp16 or bf16");
  if (desc.B < 1 || desc.NH < 1 || desc.Sq < 1 || desc.Sk < 1 || desc.HD < 1)
    XF_THROW(InvalidArgument, "cuDNN attention: bad shape");
  if (desc.NKV < 0 || desc.NH % desc.kv_heads() != 0)
    XF_THROW(InvalidArgument, "cuDNN attention: NKV must divide NH");
  if (desc.bias_grad && !desc.bias)
    XF_THROW(InvalidArgument, "cuDNN attention: bias_grad needs a bias");
  impl_->d = desc;
  impl_->training = training;
  impl_->graphs = cached_graphs(desc, training);
  if (desc.padding_mask) {
    std::vector<int> lens(desc.B, desc.Sq);
    XF_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&impl_->q_lens), sizeof(int) * desc.B));
    XF_CUDA_CHECK(
        cudaMemcpy(impl_->q_lens, lens.data(), sizeof(int) * desc.B, cudaMemcpyHostToDevice));
  }
}

CudnnAttention::~CudnnAttention() = default;

const AttentionDesc& CudnnAttention::desc() const { return impl_->d; }
std::size_t CudnnAttention::workspace_bytes() const {
  return static_cast<std::size_t>(impl_->graphs->workspace);
}
std::size_t CudnnAttention::stats_elements() const {
  return std::size_t(impl_->d.B) * impl_->d.NH * impl_->d.Sq;
}

void CudnnAttention::forward(void* o, float* stats, const void* q, const void* k, const void* v,
                             const int* kv_lens, const void* bias, Dropout dropout, void* workspace,
                             cudaStream_t stream) const {
  if (!o || !q || !k || !v || (impl_->training && !stats))
    XF_THROW(InvalidArgument, "cuDNN attention forward: missing tensor");
  std::unordered_map<std::int64_t, void*> pack = {
      {kQ, const_cast<void*>(q)}, {kK, const_cast<void*>(k)}, {kV, const_cast<void*>(v)}, {kO, o}};
  if (impl_->training) pack[kStats] = stats;
  impl_->execute(*impl_->graphs->fwd, pack, kv_lens, bias, dropout, workspace, stream, "forward");
}

void CudnnAttention::backward(void* dq, void* dk, void* dv, const void* dout, const void* o,
                              const float* stats, const void* q, const void* k, const void* v,
                              const int* kv_lens, const void* bias, Dropout dropout,
                              void* workspace, cudaStream_t stream) const {
  backward(dq, dk, dv, nullptr, dout, o, stats, q, k, v, kv_lens, bias, dropout, workspace, stream);
}

void CudnnAttention::backward(void* dq, void* dk, void* dv, void* dbias, const void* dout,
                              const void* o, const float* stats, const void* q, const void* k,
                              const void* v, const int* kv_lens, const void* bias, Dropout dropout,
                              void* workspace, cudaStream_t stream) const {
  if (!impl_->training) XF_THROW(InvalidArgument, "cuDNN attention: built without backward");
  if (impl_->d.bias_grad && !dbias) XF_THROW(InvalidArgument, "cuDNN attention: dbias needed");
  if (!dq || !dk || !dv || !dout || !o || !stats || !q || !k || !v)
    XF_THROW(InvalidArgument, "cuDNN attention backward: missing tensor");
  std::unordered_map<std::int64_t, void*> pack = {{kQ, const_cast<void*>(q)},
                                                  {kK, const_cast<void*>(k)},
                                                  {kV, const_cast<void*>(v)},
                                                  {kO, const_cast<void*>(o)},
                                                  {kDO, const_cast<void*>(dout)},
                                                  {kStats, const_cast<float*>(stats)},
                                                  {kDQ, dq},
                                                  {kDK, dk},
                                                  {kDV, dv}};
  if (impl_->d.bias_grad) pack[kDBias] = dbias;
  impl_->execute(*impl_->graphs->bwd, pack, kv_lens, bias, dropout, workspace, stream, "backward");
}

}  // namespace xfbench::kernels
