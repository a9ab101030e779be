// The fused GELU products of gemm_fused.hpp: CUTLASS 3 kernels built from its collective builders
// (TMA loads, WGMMA, persistent warp-specialised cooperative schedule) with the epilogue visitor
// trees of CUTLASS's predefined fusions, our GELU as their activation. Compiled for sm_90a only
// (kernels/CMakeLists.txt: *_sm90.cu); elsewhere the products say they are unavailable.
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

#include "kernels/detail/gelu.cuh"
#endif

namespace xfbench::kernels {

const char* to_string(FusedGemmOp op) {
  return op == FusedGemmOp::bias_gelu       ? "bias_gelu"
         : op == FusedGemmOp::bias_gelu_aux ? "bias_gelu_aux"
                                            : "dgelu";
}

std::string FusedGemmDesc::describe() const {
  return std::string(to_string(op)) + " " + to_string(precision) +
         " gelu:" + (gelu == Gelu::erf ? "erf" : "tanh") + " m=" + std::to_string(m) +
         " n=" + std::to_string(n) + " k=" + std::to_string(k);
}

#if defined(XF_SM90A)
namespace {

using namespace cute;

// The GELU as an epilogue node, its form fixed at compile time: a run-time form (an argument)
// made the forward 2.6x slower on an H200 (1.48 vs 0.57 ms at 32768x4096x1024).
template <Gelu Kind>
struct GeluOf {
  template <class T>
  struct Forward {
    CUTLASS_DEVICE T operator()(T x) const { return detail::gelu(x, Kind); }
  };
  template <int N>
  struct Forward<cutlass::Array<float, N>> {
    CUTLASS_DEVICE cutlass::Array<float, N> operator()(cutlass::Array<float, N> const& x) const {
      cutlass::Array<float, N> y;
      CUTLASS_PRAGMA_UNROLL
      for (int i = 0; i < N; ++i) y[i] = detail::gelu(x[i], Kind);
      return y;
    }
  };
  // dpre = dy * gelu'(pre): inputs (dy, pre).
  template <class T>
  struct Backward {
    CUTLASS_DEVICE T operator()(T dy, T z) const { return dy * detail::gelu_grad(z, Kind); }
  };
  template <int N>
  struct Backward<cutlass::Array<float, N>> {
    CUTLASS_DEVICE cutlass::Array<float, N> operator()(cutlass::Array<float, N> const& dy,
                                                       cutlass::Array<float, N> const& z) const {
      cutlass::Array<float, N> y;
      CUTLASS_PRAGMA_UNROLL
      for (int i = 0; i < N; ++i) y[i] = dy[i] * detail::gelu_grad(z[i], Kind);
      return y;
    }
  };
};

using RowMajor = cutlass::layout::RowMajor;
using ColumnMajor = cutlass::layout::ColumnMajor;
using TileShape = Shape<_128, _256, _64>;
using ClusterShape = Shape<_2, _1, _1>;
constexpr const char* kTileLabel = "cutlass 128x256x64 cluster 2x1 cooperative";

// One kernel: T storage, W's layout in CUTLASS terms (the forward's W [n,k] is a column-major
// [k,n] B), the fusion.
template <class T, class LayoutB, class Fusion>
struct Kernel {
  static constexpr int kAlign = 16 / sizeof(T);
  using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
      cutlass::epilogue::collective::EpilogueTileAuto, float, float, void, RowMajor, kAlign, T,
      RowMajor, kAlign, cutlass::epilogue::TmaWarpSpecializedCooperative, Fusion>::CollectiveOp;
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
                                 RowMajor, GeluOf<G>::template Forward, T, float, T, T>>;
template <class T, Gelu G>
using InferenceKernel = Kernel<
    T, ColumnMajor,
    cutlass::epilogue::fusion::LinCombPerColBiasEltAct<GeluOf<G>::template Forward, T, float, T>>;
template <class T, Gelu G>
using BackwardKernel =
    Kernel<T, RowMajor,
           cutlass::epilogue::fusion::LinCombDeEltAct<RowMajor, GeluOf<G>::template Backward, T,
                                                      float, T>>;

// What each kernel's epilogue reads and writes besides D.
enum class Role { forward, inference, backward };

template <class K, Role R>
typename K::Arguments arguments(const FusedGemmDesc& d, const FusedGemmOperands& o, int sms) {
  using GK = typename K::GemmKernel;
  using E = typename K::Gemm::ElementA;
  const int m = int(d.m), n = int(d.n), k = int(d.k);
  auto sa = cutlass::make_cute_packed_stride(typename GK::StrideA{}, make_shape(m, k, 1));
  auto sb = cutlass::make_cute_packed_stride(typename GK::StrideB{}, make_shape(n, k, 1));
  auto sd = cutlass::make_cute_packed_stride(typename GK::StrideD{}, make_shape(m, n, 1));
  typename K::Arguments args{cutlass::gemm::GemmUniversalMode::kGemm,
                             {m, n, k, 1},
                             {static_cast<const E*>(o.a), sa, static_cast<const E*>(o.b), sb},
                             {{}, nullptr, sd, static_cast<E*>(o.out), sd}};
  args.hw_info.device_id = 0;
  args.hw_info.sm_count = sms;
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

template <class K, Role R>
void launch(const FusedGemmDesc& d, const FusedGemmOperands& o, int sms, cudaStream_t s) {
  typename K::Gemm gemm;
  const auto args = arguments<K, R>(d, o, sms);
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
template <class T>
void launch_typed(const FusedGemmDesc& d, const FusedGemmOperands& o, int sms, cudaStream_t s) {
  if (d.gelu == Gelu::erf)
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
  if (major != 9 || minor != 0) return no("the fused GELU products are Hopper (sm_90) kernels");
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
