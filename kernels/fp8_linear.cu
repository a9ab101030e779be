// A linear layer's three products in FP8 (fp8_linear.hpp).
#include <cuda_fp8.h>

#include <cstdint>

#include "kernels/fp8_linear.hpp"
#include "xfbench/error.hpp"

namespace xfbench::kernels {

std::vector<Fp8Format> fp8_linear_formats() {
  return {Fp8Format::e4m3, Fp8Format::e4m3, Fp8Format::e5m2};
}

namespace {
enum : int { kX = 0, kW = 1, kDy = 2 };

// y[m, n] = a[m, k]·b[n, k]ᵀ: the one layout cuBLASLt's FP8 kernels take.
// Forward products accumulate without cuBLASLt's periodic fp32 promotion, the gradients' with it
// (TransformerEngine's split accumulator: off for fprop, on for dgrad and wgrad).
GemmDesc fp8_nt(std::int64_t m, std::int64_t n, std::int64_t k, bool a_e5m2, ElemType out,
                Epilogue e = Epilogue::none) {
  GemmDesc d;
  d.precision = Precision::fp8;
  d.fp8_fast_accum = !a_e5m2;
  d.trans_b = true;
  d.m = m, d.n = n, d.k = k;
  d.a_e5m2 = a_e5m2;
  d.out = out;
  d.epilogue = e;
  return d;
}
}  // namespace

struct Fp8Linear::Impl {
  int T, K, M;  // tokens, in, out
  const Fp8Scales& scales;
  int first;
  ElemType dw_type;
  std::uint8_t *wq = nullptr, *wqt = nullptr, *xq = nullptr, *xqt = nullptr, *dyq = nullptr,
               *dyqt = nullptr;
  std::vector<void*> owned;  // what it allocated (the rest is placed)
  std::size_t bytes = 0;
  Gemm *fwd = nullptr, *fwd_bias = nullptr, *dgrad = nullptr, *wgrad = nullptr;

  Impl(int t, int k, int m, const Fp8Scales& s, int f, ElemType dw)
      : T(t), K(k), M(m), scales(s), first(f), dw_type(dw) {}
  ~Impl() {
    for (void* p : owned) cudaFree(p);
  }
  // `placed`, else a buffer of its own.
  std::uint8_t* alloc(std::size_t n, void* placed = nullptr) {
    if (placed) return static_cast<std::uint8_t*>(placed);
    void* p = nullptr;
    if (cudaMalloc(&p, n) != cudaSuccess) {
      cudaGetLastError();
      XF_THROW(Unsupported,
               "Fp8Linear: out of device memory allocating " + std::to_string(n >> 20) + " MiB");
    }
    bytes += n;
    owned.push_back(p);
    return static_cast<std::uint8_t*>(p);
  }
  const float* inv(int which) const { return scales.scale_inv(first + which); }
  GemmOperands fwd_ops(const void* x, const void* bias, void* y) const {
    GemmOperands o;
    o.a = x, o.b = wq, o.c = y, o.bias = bias;
    o.a_scale = inv(kX), o.b_scale = inv(kW);
    return o;
  }
  GemmOperands dgrad_ops(void* dx) const {  // dx[T, K] = dy[T, M]·(Wᵀ[K, M])ᵀ
    GemmOperands o;
    o.a = dyq, o.b = wqt, o.c = dx;
    o.a_scale = inv(kDy), o.b_scale = inv(kW);
    return o;
  }
  GemmOperands wgrad_ops(void* dw) const {  // dW[M, K] = dyᵀ[M, T]·(xᵀ[K, T])ᵀ
    GemmOperands o;
    o.a = dyqt, o.b = xqt, o.c = dw;
    o.a_scale = inv(kDy), o.b_scale = inv(kX);
    return o;
  }
};

Fp8Linear::Fp8Linear(int tokens, int in, int out, const Fp8Scales& scales, int first,
                     const Fp8LinearOptions& options)
    : impl_(std::make_unique<Impl>(tokens, in, out, scales, first, options.weight_grad)) {
  const ElemType weight_grad = options.weight_grad;
  if (tokens <= 0 || in <= 0 || out <= 0 || tokens % 16 || in % 16 || out % 16)
    XF_THROW(InvalidArgument, "Fp8Linear " + std::to_string(tokens) + " tokens, " +
                                  std::to_string(in) + " -> " + std::to_string(out) +
                                  ": each a positive multiple of 16");
  if (first < 0 || first + 3 > scales.count())
    XF_THROW(InvalidArgument, "Fp8Linear: scales " + std::to_string(first) + ".." +
                                  std::to_string(first + 2) + " of " +
                                  std::to_string(scales.count()));
  const std::vector<Fp8Format> want = fp8_linear_formats();
  for (int i = 0; i < 3; ++i)
    if (scales.format(first + i) != want[std::size_t(i)])
      XF_THROW(InvalidArgument, "Fp8Linear: scale " + std::to_string(first + i) + " is " +
                                    to_string(scales.format(first + i)) + ", expected " +
                                    to_string(want[std::size_t(i)]));
  if (weight_grad != ElemType::bf16 && weight_grad != ElemType::f32)
    XF_THROW(InvalidArgument, "Fp8Linear: weight gradients in bf16 or f32");
  Impl& m = *impl_;
  const std::size_t T = std::size_t(tokens), K = std::size_t(in), M = std::size_t(out);
  m.fwd = &gemm_plan(fp8_nt(tokens, out, in, false, ElemType::bf16));
  m.wq = m.alloc(M * K);
  m.xq = m.alloc(T * K, options.scratch.x);
  if (!options.backward) return;
  m.dgrad = &gemm_plan(fp8_nt(tokens, in, out, true, ElemType::bf16));
  GemmOptions side;  // the weight gradient may run on a stream of its own
  side.private_workspace = true;
  m.wgrad = &gemm_plan(fp8_nt(out, in, tokens, true, weight_grad), side);
  m.wqt = m.alloc(M * K);
  m.xqt = m.alloc(T * K, options.scratch.xt);
  m.dyq = m.alloc(T * M, options.scratch.dy), m.dyqt = m.alloc(T * M, options.scratch.dyt);
}

Fp8Linear::~Fp8Linear() = default;

void Fp8Linear::cast_weight(cudaStream_t s, const __nv_bfloat16* w) {
  Impl& m = *impl_;
  fp8_cast_transpose(m.wq, m.wqt, w, m.M, m.K, m.scales, m.first + kW, s);  // no wqt: fwd only
}

void Fp8Linear::forward(cudaStream_t s, const __nv_bfloat16* x, __nv_bfloat16* y,
                        const __nv_bfloat16* bias) {
  Impl& m = *impl_;
  fp8_cast(m.xq, x, std::size_t(m.T) * m.K, m.scales, m.first + kX, s);
  forward_fp8(s, m.xq, y, bias);
}

Fp8Output Fp8Linear::input(void* q) const { return {q, &impl_->scales, impl_->first + kX}; }

Fp8Output Fp8Linear::input_transposed(void* qt) const {
  return {impl_->xq, &impl_->scales, impl_->first + kX, qt};
}

void Fp8Linear::forward_fp8(cudaStream_t s, const void* xq, __nv_bfloat16* y,
                            const __nv_bfloat16* bias) {
  Impl& m = *impl_;
  if (bias && !m.fwd_bias)
    m.fwd_bias = &gemm_plan(fp8_nt(m.T, m.M, m.K, false, ElemType::bf16, Epilogue::bias));
  (bias ? m.fwd_bias : m.fwd)->run(s, m.fwd_ops(xq, bias, y));
}

void Fp8Linear::cast_grad(cudaStream_t s, const __nv_bfloat16* dy, __nv_bfloat16* dbias,
                          float* scratch) {
  Impl& m = *impl_;
  if (!m.dgrad) XF_THROW(InvalidArgument, "Fp8Linear: built forward only");
  fp8_cast_transpose(m.dyq, m.dyqt, dy, m.T, m.M, m.scales, m.first + kDy, s, false, dbias,
                     scratch);
}

Fp8Output Fp8Linear::grad_input(bool transposed) const {
  if (!impl_->dgrad) XF_THROW(InvalidArgument, "Fp8Linear: built forward only");
  return {impl_->dyq, &impl_->scales, impl_->first + kDy, transposed ? impl_->dyqt : nullptr};
}

void Fp8Linear::grad_written(cudaStream_t s) {
  Impl& m = *impl_;
  if (!m.dgrad) XF_THROW(InvalidArgument, "Fp8Linear: built forward only");
  fp8_transpose(m.dyqt, m.dyq, m.T, m.M, s);
}

void Fp8Linear::backward_data(cudaStream_t s, __nv_bfloat16* dx, float beta,
                              const __nv_bfloat16* c_in) {
  Impl& m = *impl_;
  GemmOperands o = m.dgrad_ops(dx);
  if (beta != 0.f) {
    if (!c_in || c_in == dx)
      XF_THROW(InvalidArgument, "Fp8Linear: a data gradient added to another reads it apart");
    o.beta = beta, o.c_in = c_in;
  }
  m.dgrad->run(s, o);
}

void Fp8Linear::backward_weight(cudaStream_t s, const __nv_bfloat16* x, void* dw) {
  Impl& m = *impl_;
  fp8_cast_transpose(nullptr, m.xqt, x, m.T, m.K, m.scales, m.first + kX, s, /*recast=*/true);
  m.wgrad->run(s, m.wgrad_ops(dw));
}

void Fp8Linear::backward_weight_fp8(cudaStream_t s, const void* xq, void* dw) {
  Impl& m = *impl_;
  if (!m.wgrad) XF_THROW(InvalidArgument, "Fp8Linear: built forward only");
  fp8_transpose(m.xqt, xq, m.T, m.K, s);
  m.wgrad->run(s, m.wgrad_ops(dw));
}

void Fp8Linear::backward_weight_fp8t(cudaStream_t s, const void* xqt, void* dw) {
  Impl& m = *impl_;
  if (!m.wgrad) XF_THROW(InvalidArgument, "Fp8Linear: built forward only");
  GemmOperands o = m.wgrad_ops(dw);
  o.b = xqt;
  m.wgrad->run(s, o);
}

void Fp8Linear::tune(cudaStream_t s) {
  Impl& m = *impl_;
  // Outputs of the search: scratch of the right sizes (their values are overwritten anyway).
  void *y = nullptr, *dx = nullptr, *dw = nullptr;
  XF_CUDA_CHECK(cudaMalloc(&y, std::size_t(m.T) * m.M * 2));
  XF_CUDA_CHECK(cudaMalloc(&dx, std::size_t(m.T) * m.K * 2));
  XF_CUDA_CHECK(cudaMalloc(&dw, std::size_t(m.M) * m.K * elem_size(m.dw_type)));
  if (!m.fwd->tuned()) m.fwd->tune(s, m.fwd_ops(m.xq, nullptr, y));
  if (m.dgrad && !m.dgrad->tuned()) m.dgrad->tune(s, m.dgrad_ops(dx));
  if (m.wgrad && !m.wgrad->tuned()) m.wgrad->tune(s, m.wgrad_ops(dw));
  XF_CUDA_CHECK(cudaStreamSynchronize(s));
  cudaFree(y), cudaFree(dx), cudaFree(dw);
}

std::size_t Fp8Linear::device_bytes() const { return impl_->bytes; }
const GemmDesc& Fp8Linear::forward_desc() const { return impl_->fwd->desc(); }

}  // namespace xfbench::kernels
