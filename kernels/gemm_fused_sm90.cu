// The fused products of gemm_fused.hpp: CUTLASS 3 kernels built from its collective builders (TMA
// loads, WGMMA, persistent warp-specialised cooperative schedule). The GELU products use the
// epilogue visitor trees of CUTLASS's predefined fusions with our GELU as their activation; the
// gated products trees of our own (GatedEpilogue below) from CUTLASS's nodes. Compiled for sm_90a
// only (kernels/CMakeLists.txt: *_sm90.cu); elsewhere the products say they are unavailable.
#include "kernels/gemm_fused.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "xfbench/error.hpp"

#if defined(XF_SM90A)
#include <cutlass/cutlass.h>
#include <cutlass/gemm/device/gemm_universal_adapter.h>
#include <cute/tensor.hpp>
#include <cutlass/epilogue/collective/collective_builder.hpp>
#include <cutlass/epilogue/fusion/operations.hpp>
#include <cutlass/gemm/collective/collective_builder.hpp>
#include <cutlass/gemm/kernel/gemm_universal.hpp>
#include <cutlass/util/packed_stride.hpp>

#include "kernels/detail/gate.cuh"
#include "kernels/detail/gelu.cuh"
#endif

namespace xfbench::kernels {

bool is_gated(FusedGemmOp op) {
  return op == FusedGemmOp::gated || op == FusedGemmOp::gated_aux || op == FusedGemmOp::dgated;
}

const char* to_string(FusedGemmOp op) {
  switch (op) {
    case FusedGemmOp::bias_gelu:
      return "bias_gelu";
    case FusedGemmOp::bias_gelu_aux:
      return "bias_gelu_aux";
    case FusedGemmOp::dgelu:
      return "dgelu";
    case FusedGemmOp::gated:
      return "gated";
    case FusedGemmOp::gated_aux:
      return "gated_aux";
    case FusedGemmOp::dgated:
      return "dgated";
  }
  return "?";
}

std::string FusedGemmDesc::describe() const {
  const char* act = is_gated(op) ? (gate == GateAct::silu       ? " gate:silu"
                                    : gate == GateAct::gelu_erf ? " gate:gelu-erf"
                                                                : " gate:gelu-tanh")
                                 : (gelu == Gelu::erf ? " gelu:erf" : " gelu:tanh");
  return std::string(to_string(op)) + " " + to_string(precision) + act + " m=" + std::to_string(m) +
         " n=" + std::to_string(n) + " k=" + std::to_string(k);
}

#if defined(XF_SM90A)
namespace {

using namespace cute;

// A function of fp32 values as an epilogue compute node: Sm90Compute instantiates it on float
// and calls it on the fragments Array<float, N>, element by element. The activation's form is a
// template argument, fixed at compile time: a run-time form (an argument) made the GELU forward
// 2.6x slower on an H200 (1.48 vs 0.57 ms at 32768x4096x1024).
template <class F>
struct Elementwise {
  template <class T>
  struct Fn {
    template <class... X>
    CUTLASS_DEVICE T operator()(X const&... x) const {
      return F{}(x...);
    }
  };
  template <int N>
  struct Fn<cutlass::Array<float, N>> {
    template <class... X>
    CUTLASS_DEVICE cutlass::Array<float, N> operator()(X const&... x) const {
      cutlass::Array<float, N> y;
      CUTLASS_PRAGMA_UNROLL
      for (int i = 0; i < N; ++i) y[i] = F{}(x[i]...);
      return y;
    }
  };
};

template <Gelu Kind>
struct GeluFn {  // act = gelu(pre)
  CUTLASS_DEVICE float operator()(float pre) const { return detail::gelu(pre, Kind); }
};
template <Gelu Kind>
struct DGeluFn {  // dpre = dy · gelu'(pre)
  CUTLASS_DEVICE float operator()(float dy, float pre) const {
    return dy * detail::gelu_grad(pre, Kind);
  }
};
template <GateAct G>
struct GatedFn {  // act = f(gate) · up
  CUTLASS_DEVICE float operator()(float gate, float up) const {
    return detail::gate_value(gate, G) * up;
  }
};
template <GateAct G>
struct DUpFn {  // dup = g · f(gate)
  CUTLASS_DEVICE float operator()(float g, float gate) const {
    return g * detail::gate_value(gate, G);
  }
};
template <GateAct G>
struct DGateFn {  // dgate = g · up · f'(gate)
  CUTLASS_DEVICE float operator()(float g, float gate, float up) const {
    return g * up * detail::gate_grad(gate, G);
  }
};
// What each kernel's epilogue reads and writes besides D.
enum class Role { inference, forward, backward };

// The gated products' epilogues, as operations the epilogue builder hands to their callbacks
// (the specialisation of cutlass::epilogue::fusion::FusionCallbacks below builds the trees).
template <class T, GateAct G, Role R>
struct GatedEpilogue : cutlass::epilogue::fusion::FusionOperation {
  using ElementOutput = T;
  using ElementCompute = float;
};

}  // namespace
}  // namespace xfbench::kernels

namespace cutlass::epilogue::fusion {

// The trees of the gated products, their aux tensors pre's halves (row pitch 2n: dAux):
//   inference   D = f(gate) · acc
//   forward     D = f(gate) · acc, and acc stored as up
//   backward    D = acc · up · f'(gate) (dgate), and acc · f(gate) stored (dup): a graph, acc and
//               gate feeding both
// Their shared-memory stages and copies are those CUTLASS's own aux loads and stores get from the
// builder (sm90_builder.inl: CallbacksBuilder), from the dispatch policy's stages.
template <int StagesC, int StagesD, class T, xfbench::kernels::GateAct G, xfbench::kernels::Role R,
          class EpilogueTile>
struct GatedTrees {
  using Stride = cutlass::gemm::TagToStrideC_t<cutlass::layout::RowMajor>;
  using Atom =
      decltype(collective::detail::sm90_get_epilogue_smem_swizzle_layout_atom<Stride, T,
                                                                              EpilogueTile>());
  using S2R =
      decltype(collective::detail::sm90_get_smem_load_op_for_source<Stride, T, EpilogueTile>());
  using R2S = decltype(collective::detail::sm90_get_smem_store_op_for_accumulator<Stride, T,
                                                                                  EpilogueTile>());
  static constexpr auto kRound = FloatRoundStyle::round_to_nearest;
  using Load = Sm90AuxLoad<StagesC, EpilogueTile, T, Stride, Atom, S2R>;
  using Store = Sm90AuxStore<StagesD, EpilogueTile, T, kRound, Stride, Atom, R2S>;
  template <class F, class Out>
  using Compute = Sm90Compute<xfbench::kernels::Elementwise<F>::template Fn, Out, float, kRound>;
  using Gated = Compute<xfbench::kernels::GatedFn<G>, T>;

  using Inference = Sm90EVT<Gated, Load, Sm90AccFetch>;
  using Forward = Sm90EVT<Gated, Load, Sm90EVT<Store, Sm90AccFetch>>;
  using Backward =
      Sm90TopologicalVisitor<float,
                             cute::tuple<cute::seq<>, cute::seq<>, cute::seq<>, cute::seq<0, 1>,
                                         cute::seq<3>, cute::seq<0, 1, 2>>,
                             Sm90AccFetch, Load, Load, Compute<xfbench::kernels::DUpFn<G>, float>,
                             Store, Compute<xfbench::kernels::DGateFn<G>, T>>;
  using type = cute::conditional_t<
      R == xfbench::kernels::Role::inference, Inference,
      cute::conditional_t<R == xfbench::kernels::Role::forward, Forward, Backward>>;
};

template <int StagesC, int StagesD, int FragmentSize, bool ReuseSmemC, bool DelayTmaStore, class T,
          xfbench::kernels::GateAct G, xfbench::kernels::Role R, class CtaTileShapeMNK,
          class EpilogueTile>
struct FusionCallbacks<
    epilogue::Sm90TmaWarpSpecialized<StagesC, StagesD, FragmentSize, ReuseSmemC, DelayTmaStore>,
    xfbench::kernels::GatedEpilogue<T, G, R>, CtaTileShapeMNK, EpilogueTile>
    : GatedTrees<StagesC, StagesD, T, G, R, EpilogueTile>::type {
  using Impl = typename GatedTrees<StagesC, StagesD, T, G, R, EpilogueTile>::type;
  using Operation = xfbench::kernels::GatedEpilogue<T, G, R>;
  using Impl::Impl;
};

}  // namespace cutlass::epilogue::fusion

namespace xfbench::kernels {
namespace {

using RowMajor = cutlass::layout::RowMajor;
using ColumnMajor = cutlass::layout::ColumnMajor;
using TileShape = Shape<_128, _256, _64>;
using ClusterShape = Shape<_2, _1, _1>;
constexpr const char* kTileLabel = "cutlass 128x256x64 cluster 2x1 cooperative";

// The epilogue's dispatch policy: the builder's (sm90_builder.inl), with `StagesC` stages of the
// loaded tensors where nonzero. The builder's four stages of two aux tensors (the gated backward)
// take 64 KB of shared memory and leave the main loop two stages of 48 KB; two stages leave it
// three, as the GELU backward has.
template <class Policy, int StagesC>
struct WithLoadStages {
  using type = Policy;
};
template <int C, int D, int F, bool R, bool Delay, int StagesC>
struct WithLoadStages<cutlass::epilogue::Sm90TmaWarpSpecialized<C, D, F, R, Delay>, StagesC> {
  using type = cutlass::epilogue::Sm90TmaWarpSpecialized<StagesC ? StagesC : C, D, F, R, Delay>;
};

// One kernel: T storage, W's layout in CUTLASS terms (the forward's W [n,k] is a column-major
// [k,n] B), the fusion, the epilogue's load stages (0: the builder's). The epilogue is what
// CUTLASS's epilogue builder makes (its Sm90TmaBuilderImpl), but for the policy.
template <class T, class LayoutB, class Fusion, int StagesC = 0>
struct Kernel {
  static constexpr int kAlign = 16 / sizeof(T);
  using Schedule = cutlass::epilogue::TmaWarpSpecializedCooperative;
  using EpilogueTile =
      decltype(cutlass::epilogue::collective::detail::sm90_compute_tile_shape_or_override<
               T, cutlass::epilogue::collective::EpilogueTileAuto, Schedule, TileShape>());
  using Policy = typename WithLoadStages<
      decltype(cutlass::epilogue::collective::detail::sm90_get_tma_dispatch_policy<
               TileShape, EpilogueTile, void, T, Schedule>()),
      StagesC>::type;
  using Epilogue = typename cutlass::epilogue::collective::detail::Sm90TmaBuilderImpl<
      TileShape, EpilogueTile, float, float, void, RowMajor, kAlign, T, RowMajor, kAlign, Fusion,
      Policy>::CollectiveOp;
  using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, T, RowMajor, kAlign, T, LayoutB, kAlign,
      float, TileShape, ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
          sizeof(typename Epilogue::SharedStorage))>,
      cutlass::gemm::KernelTmaWarpSpecializedCooperative>::CollectiveOp;
  using GemmKernel =
      cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, Mainloop, Epilogue,
                                           cutlass::gemm::PersistentScheduler>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<GemmKernel>;
  using Arguments = typename Gemm::Arguments;
};

template <class T, Gelu G>
using ForwardKernel = Kernel<T, ColumnMajor,
                             cutlass::epilogue::fusion::LinCombPerColBiasEltActAux<
                                 RowMajor, Elementwise<GeluFn<G>>::template Fn, T, float, T, T>>;
template <class T, Gelu G>
using InferenceKernel =
    Kernel<T, ColumnMajor,
           cutlass::epilogue::fusion::LinCombPerColBiasEltAct<Elementwise<GeluFn<G>>::template Fn,
                                                              T, float, T>>;
template <class T, Gelu G>
using BackwardKernel = Kernel<T, RowMajor,
                              cutlass::epilogue::fusion::LinCombDeEltAct<
                                  RowMajor, Elementwise<DGeluFn<G>>::template Fn, T, float, T>>;
template <class T, GateAct G, Role R>
using GatedKernel = Kernel<T, cute::conditional_t<R == Role::backward, RowMajor, ColumnMajor>,
                           GatedEpilogue<T, G, R>, R == Role::backward ? 2 : 0>;

// The product's arguments with D's rows `ld` apart, the epilogue's own left to the caller.
template <class K>
typename K::Arguments product_arguments(const FusedGemmDesc& d, const FusedGemmOperands& o, int sms,
                                        int ld) {
  using GK = typename K::GemmKernel;
  using E = typename K::Gemm::ElementA;
  const int m = int(d.m), n = int(d.n), k = int(d.k);
  auto sa = cutlass::make_cute_packed_stride(typename GK::StrideA{}, make_shape(m, k, 1));
  auto sb = cutlass::make_cute_packed_stride(typename GK::StrideB{}, make_shape(n, k, 1));
  auto sd = cutlass::make_cute_packed_stride(typename GK::StrideD{}, make_shape(m, ld, 1));
  typename K::Arguments args{cutlass::gemm::GemmUniversalMode::kGemm,
                             {m, n, k, 1},
                             {static_cast<const E*>(o.a), sa, static_cast<const E*>(o.b), sb},
                             {{}, nullptr, sd, static_cast<E*>(o.out), sd}};
  args.hw_info.device_id = 0;
  args.hw_info.sm_count = sms;
  return args;
}

template <class K, Role R>
typename K::Arguments arguments(const FusedGemmDesc& d, const FusedGemmOperands& o, int sms) {
  using E = typename K::Gemm::ElementA;
  typename K::Arguments args = product_arguments<K>(d, o, sms, int(d.n));
  const auto sd = args.epilogue.dD;
  auto& f = args.epilogue.thread;
  f.alpha = 1.f, f.beta = 0.f;
  if constexpr (R == Role::forward) {
    f.bias_ptr = static_cast<const E*>(o.bias);
    f.aux_ptr = static_cast<E*>(o.pre);
    f.dAux = sd;
  } else if constexpr (R == Role::inference) {
    f.bias_ptr = static_cast<const E*>(o.bias);
  } else {
    f.aux_ptr = static_cast<const E*>(o.pre);
    f.dAux = sd;
  }
  return args;
}

// The gated products': pre [m, 2n] (and the backward's dpre) with rows 2n apart, the gate's half
// first; D is act [m, n], or dpre's first half.
template <class K, Role R>
typename K::Arguments gated_arguments(const FusedGemmDesc& d, const FusedGemmOperands& o, int sms) {
  using E = typename K::Gemm::ElementA;
  const int n = int(d.n);
  typename K::Arguments args = product_arguments<K>(d, o, sms, R == Role::backward ? 2 * n : n);
  const auto s2n = cutlass::make_cute_packed_stride(typename K::GemmKernel::StrideD{},
                                                    make_shape(int(d.m), 2 * n, 1));
  E* pre = static_cast<E*>(o.pre);
  auto& f = args.epilogue.thread;  // the tree's arguments: children first, then the node's
  if constexpr (R == Role::inference)
    f = {{pre, E(0), s2n}, {}, {}};
  else if constexpr (R == Role::forward)
    f = {{pre, E(0), s2n}, {{}, {pre + n, s2n}}, {}};
  else  // the graph's nodes in order: acc, gate, up, dup, its store, dgate
    f = {{}, {pre, E(0), s2n}, {pre + n, E(0), s2n}, {}, {static_cast<E*>(o.out) + n, s2n}, {}};
  return args;
}

template <class K, Role R, bool Gated = false>
void launch(const FusedGemmDesc& d, const FusedGemmOperands& o, int sms, cudaStream_t s) {
  typename K::Gemm gemm;
  const auto args = [&] {
    if constexpr (Gated)
      return gated_arguments<K, R>(d, o, sms);
    else
      return arguments<K, R>(d, o, sms);
  }();
  cutlass::Status st = gemm.can_implement(args);
  if (st != cutlass::Status::kSuccess)
    XF_THROW(InvalidArgument, "fused GEMM " + d.describe() + ": CUTLASS cannot run it (" +
                                  cutlassGetStatusString(st) + ")");
  if (K::Gemm::get_workspace_size(args) != 0)  // the persistent scheduler's is none
    XF_THROW(Error, "fused GEMM " + d.describe() + ": the kernel asks for a workspace");
  st = gemm.run(args, nullptr, s);
  if (st != cutlass::Status::kSuccess)
    XF_THROW(Error,
             "fused GEMM " + d.describe() + ": launch failed (" + cutlassGetStatusString(st) + ")");
}

template <class T, Gelu G>
void launch_typed(const FusedGemmDesc& d, const FusedGemmOperands& o, int sms, cudaStream_t s) {
  if (d.op == FusedGemmOp::bias_gelu)
    launch<InferenceKernel<T, G>, Role::inference>(d, o, sms, s);
  else if (d.op == FusedGemmOp::bias_gelu_aux)
    launch<ForwardKernel<T, G>, Role::forward>(d, o, sms, s);
  else
    launch<BackwardKernel<T, G>, Role::backward>(d, o, sms, s);
}
template <class T, GateAct G>
void launch_gated(const FusedGemmDesc& d, const FusedGemmOperands& o, int sms, cudaStream_t s) {
  if (d.op == FusedGemmOp::gated)
    launch<GatedKernel<T, G, Role::inference>, Role::inference, true>(d, o, sms, s);
  else if (d.op == FusedGemmOp::gated_aux)
    launch<GatedKernel<T, G, Role::forward>, Role::forward, true>(d, o, sms, s);
  else
    launch<GatedKernel<T, G, Role::backward>, Role::backward, true>(d, o, sms, s);
}
template <class T>
void launch_typed(const FusedGemmDesc& d, const FusedGemmOperands& o, int sms, cudaStream_t s) {
  if (is_gated(d.op)) {
    if (d.gate == GateAct::silu)
      launch_gated<T, GateAct::silu>(d, o, sms, s);
    else if (d.gate == GateAct::gelu_erf)
      launch_gated<T, GateAct::gelu_erf>(d, o, sms, s);
    else
      launch_gated<T, GateAct::gelu_tanh>(d, o, sms, s);
  } else if (d.gelu == Gelu::erf)
    launch_typed<T, Gelu::erf>(d, o, sms, s);
  else
    launch_typed<T, Gelu::tanh>(d, o, sms, s);
}

}  // namespace
#endif

struct FusedGemm::Impl {
  FusedGemmDesc desc;
  int sms = 0;
};

bool fused_gemm_available(std::string* why) {
  auto no = [&](const char* reason) {
    if (why) *why = reason;
    return false;
  };
#if defined(XF_SM90A)
  int dev = 0, major = 0, minor = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return no("no CUDA device");
  XF_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  XF_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
  if (major != 9 || minor != 0) return no("the fused products are Hopper (sm_90) kernels");
  return true;
#else
  return no("this build has no sm_90a kernels (CMAKE_CUDA_ARCHITECTURES without 90)");
#endif
}

FusedGemm::FusedGemm(const FusedGemmDesc& desc) : impl_(std::make_unique<Impl>()) {
  impl_->desc = desc;
  if (desc.precision != Precision::bf16 && desc.precision != Precision::fp16)
    XF_THROW(Unsupported, "fused GEMM " + desc.describe() + ": bf16 or fp16 only");
  if (desc.m <= 0 || desc.n <= 0 || desc.k <= 0 || desc.n % 8 || desc.k % 8 || desc.m > INT32_MAX ||
      desc.n > INT32_MAX || desc.k > INT32_MAX)
    XF_THROW(InvalidArgument,
             "fused GEMM " + desc.describe() + ": m, n, k positive, n and k multiples of 8");
  std::string why;
  if (!fused_gemm_available(&why)) XF_THROW(Unsupported, "fused GEMM: " + why);
#if defined(XF_SM90A)
  int dev = 0;
  XF_CUDA_CHECK(cudaGetDevice(&dev));
  XF_CUDA_CHECK(cudaDeviceGetAttribute(&impl_->sms, cudaDevAttrMultiProcessorCount, dev));
#endif
}

FusedGemm::~FusedGemm() = default;

const FusedGemmDesc& FusedGemm::desc() const { return impl_->desc; }

std::string FusedGemm::label() const {
#if defined(XF_SM90A)
  return kTileLabel;
#else
  return "unavailable";
#endif
}

void FusedGemm::run(cudaStream_t stream, const FusedGemmOperands& ops) const {
  const FusedGemmDesc& d = impl_->desc;
  const void* pre = d.op == FusedGemmOp::bias_gelu ? ops.a : ops.pre;  // bias_gelu reads none
  for (const void* p : {ops.a, ops.b, static_cast<const void*>(ops.out), pre})
    if (!p || reinterpret_cast<std::uintptr_t>(p) % 16)
      XF_THROW(InvalidArgument, "fused GEMM run: a, b, out and pre non-null, 16-byte aligned");
  if (ops.bias && reinterpret_cast<std::uintptr_t>(ops.bias) % 16)
    XF_THROW(InvalidArgument, "fused GEMM run: bias 16-byte aligned");
  if (ops.bias && is_gated(d.op))
    XF_THROW(InvalidArgument, "fused GEMM run: the gated products take no bias");
#if defined(XF_SM90A)
  if (d.precision == Precision::bf16)
    launch_typed<cutlass::bfloat16_t>(d, ops, impl_->sms, stream);
  else
    launch_typed<cutlass::half_t>(d, ops, impl_->sms, stream);
#else
  (void)stream;
  XF_THROW(Unsupported, "fused GEMM " + d.describe() + ": not built");
#endif
}

}  // namespace xfbench::kernels
