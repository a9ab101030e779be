// FP8 casts with the amax in the same pass, their transposing form, and the recipes' scale
// bookkeeping (fp8.hpp).
#include <cuda_fp8.h>

#include <algorithm>
#include <cstdint>

#include "kernels/detail/cast_transpose.cuh"
#include "kernels/detail/fp8_store.cuh"
#include "kernels/fp8.hpp"
#include "xfbench/error.hpp"

namespace xfbench::kernels {

const char* to_string(Fp8Format f) { return f == Fp8Format::e4m3 ? "e4m3" : "e5m2"; }
ElemType elem_type(Fp8Format f) { return f == Fp8Format::e4m3 ? ElemType::e4m3 : ElemType::e5m2; }
const char* to_string(Fp8Recipe r) { return r == Fp8Recipe::delayed ? "delayed" : "current"; }
Fp8Recipe fp8_recipe(const std::string& name) {
  if (name == "delayed") return Fp8Recipe::delayed;
  if (name == "current") return Fp8Recipe::current;
  XF_THROW(InvalidArgument, "fp8 recipe '" + name + "': expected delayed or current");
}

namespace {

// Where each part of Fp8Scales' allocation lies (n tensors, history length len). cuBLASLt takes
// scale pointers aligned as its matrices (it rejected 4-byte aligned ones at run time: NOT
// SUPPORTED), so each scale_inv has a 256-byte slot of its own; the rest is packed.
constexpr int kSlot = 64;  // floats per scale_inv slot
struct Parts {
  float *scale_inv, *scale, *amax, *max, *history;  // scale_inv[i · kSlot]
  int* position;
  unsigned long long* overflow;
};
std::size_t parts_bytes(int n, int len) {
  return (std::size_t(kSlot + 3) * n + std::size_t(n) * len) * sizeof(float) + 16;
}
Parts parts(void* mem, int n, int len) {
  float* f = static_cast<float*>(mem);
  float* packed = f + std::size_t(kSlot) * n;
  Parts p{f, packed, packed + n, packed + 2 * n, packed + 3 * n, nullptr, nullptr};
  char* tail = reinterpret_cast<char*>(packed + 3 * n + std::size_t(n) * len);
  tail = reinterpret_cast<char*>((reinterpret_cast<std::uintptr_t>(tail) + 7) & ~std::uintptr_t(7));
  p.overflow = reinterpret_cast<unsigned long long*>(tail);
  p.position = reinterpret_cast<int*>(tail + 8);
  return p;
}

__global__ void reset_kernel(Parts p, int n, int len) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n * len; i += gridDim.x * blockDim.x)
    p.history[i] = 0.f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    p.scale[i] = p.scale_inv[i * kSlot] = 1.f;
    p.amax[i] = 0.f;
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) *p.overflow = 0, *p.position = 0;
}

// One block, a warp per tensor: tensor i's amax joins its ring at the shared position, and the
// scale follows the ring's maximum (the warp's lanes read the ring in strides: a thread reading
// the 1024 entries alone took 56 us a launch on an H100, one launch per block a step).
__global__ void update_delayed_kernel(Parts p, int n, int len, int margin) {
  const int pos = *p.position, lane = threadIdx.x & 31;
  for (int i = threadIdx.x >> 5; i < n; i += blockDim.x >> 5) {
    float* h = p.history + std::size_t(i) * len;
    const float amax = p.amax[i];
    float m = amax;
    for (int j = lane; j < len; j += 32)
      if (j != pos) m = fmaxf(m, h[j]);
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    if (lane == 0) {
      h[pos] = amax;
      const float s = fp8_scale_from_amax(m, p.scale[i], p.max[i], margin);
      p.scale[i] = s;
      p.scale_inv[i * kSlot] = 1.f / s;
      p.amax[i] = 0.f;
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) *p.position = (pos + 1) % len;
}

// Eight bf16 values at x (16-byte aligned) times s as eight FP8 bytes; amax m and the clipped
// count `over` carried along.
__device__ __forceinline__ uint2 cast8(const __nv_bfloat16* x, float s, float clip,
                                       __nv_fp8_interpretation_t f, float& m,
                                       unsigned long long& over) {
  float a[detail::kVec];
  detail::load8(a, x);
  return detail::fp8_cast8(a, s, clip, f, m, over);
}

__device__ __forceinline__ float clip_of(__nv_fp8_interpretation_t f) {
  return fp8_clip(f == __NV_E4M3 ? Fp8Format::e4m3 : Fp8Format::e5m2);
}

// The scale this cast uses: the delayed recipe's as held; the current recipe's from the amax just
// measured (block 0 publishes it and its inverse; every block computes the same value).
__device__ __forceinline__ float cast_scale(const Parts& p, int i, bool current, int margin) {
  if (!current) return p.scale[i];
  const float s = fp8_scale_from_amax(p.amax[i], p.scale[i], p.max[i], margin);
  return s;
}
__device__ __forceinline__ void publish_current_scale(const Parts& p, int i, float s) {
  if (blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0) {
    p.scale[i] = s;
    p.scale_inv[i * kSlot] = 1.f / s;
  }
}

__global__ void amax_kernel(const __nv_bfloat16* x, std::size_t n8, float* amax) {
  float m = 0.f;
  for (std::size_t v = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; v < n8;
       v += std::size_t(gridDim.x) * blockDim.x) {
    float f[detail::kVec];
    detail::load8(f, x + v * detail::kVec);
#pragma unroll
    for (int j = 0; j < detail::kVec; ++j) m = fmaxf(m, fabsf(f[j]));
  }
  detail::fp8_publish(m, 0, amax, nullptr, true);
}

__global__ void cast_kernel(std::uint8_t* q, const __nv_bfloat16* x, std::size_t n8, Parts p, int i,
                            __nv_fp8_interpretation_t f, bool current, int margin) {
  const float s = cast_scale(p, i, current, margin), clip = clip_of(f);
  float m = 0.f;
  unsigned long long over = 0;
  for (std::size_t v = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; v < n8;
       v += std::size_t(gridDim.x) * blockDim.x) {
    *reinterpret_cast<uint2*>(q + v * detail::kVec) =
        cast8(x + v * detail::kVec, s, clip, f, m, over);
  }
  detail::fp8_publish(m, over, p.amax + i, p.overflow, !current);
  if (current) publish_current_scale(p, i, s);
}

using detail::kTile;
using detail::store_column_run;
using detail::Tile;

// x as the tile pass reads it (fp8_cast_transpose).
struct LoadBf16 {
  const __nv_bfloat16* x;
  __device__ __forceinline__ void value(std::size_t off, int, float (&v)[detail::kVec]) const {
    detail::load8(v, x + off);
  }
};

// qt = qᵀ in 64 x 64 byte tiles, 256 threads: each loads one 16-byte row run of the tile and
// stores one 16-byte column run.
__global__ void transpose_kernel(std::uint8_t* qt, const std::uint8_t* q, int rows, int cols) {
  __shared__ Tile tile;
  const int r0 = blockIdx.y * kTile, c0 = blockIdx.x * kTile;
  {
    const int r = threadIdx.x / (kTile / 16), c = (threadIdx.x % (kTile / 16)) * 16;
    if (r0 + r < rows && c0 + c < cols)
      *reinterpret_cast<uint4*>(&tile[r][c]) =
          *reinterpret_cast<const uint4*>(q + std::size_t(r0 + r) * cols + c0 + c);
  }
  __syncthreads();
  store_column_run(qt, tile, r0, c0, rows, cols);
}

__global__ void dequantize_kernel(float* x, const std::uint8_t* q, std::size_t n,
                                  __nv_fp8_interpretation_t f, const float* scale_inv) {
  const float s = *scale_inv;
  for (std::size_t k = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; k < n;
       k += std::size_t(gridDim.x) * blockDim.x) {
    x[k] = float(__half(__nv_cvt_fp8_to_halfraw(q[k], f))) * s;
  }
}

using detail::fp8_interp;

unsigned grid_for(std::size_t work, int threads) {
  return unsigned(std::clamp<std::size_t>((work + threads - 1) / threads, 1, 132 * 8));
}

}  // namespace

// ---- Fp8Scales ---------------------------------------------------------------------------------

Fp8Scales::Fp8Scales(std::vector<Fp8Format> formats, const Fp8RecipeConfig& config)
    : formats_(std::move(formats)), config_(config) {
  if (formats_.empty()) XF_THROW(InvalidArgument, "Fp8Scales: no tensors");
  if (config_.history < 1 || config_.history > 65536)
    XF_THROW(InvalidArgument,
             "fp8 amax history " + std::to_string(config_.history) + ": expected 1 to 65536 steps");
  if (config_.margin < 0 || config_.margin > 30)
    XF_THROW(InvalidArgument,
             "fp8 margin " + std::to_string(config_.margin) + ": expected 0 to 30");
  XF_CUDA_CHECK(cudaMalloc(&mem_, parts_bytes(count(), config_.history)));
  std::vector<float> maxes;
  for (Fp8Format f : formats_) maxes.push_back(fp8_max(f));
  XF_CUDA_CHECK(cudaMemcpy(parts(mem_, count(), config_.history).max, maxes.data(),
                           maxes.size() * sizeof(float), cudaMemcpyHostToDevice));
  reset(nullptr);
  XF_CUDA_CHECK(cudaStreamSynchronize(nullptr));
}

Fp8Scales::~Fp8Scales() {
  if (mem_) cudaFree(mem_);
}

float* Fp8Scales::scale(int i) const { return parts(mem_, count(), config_.history).scale + i; }
const float* Fp8Scales::scale_inv(int i) const {
  return parts(mem_, count(), config_.history).scale_inv + std::size_t(i) * kSlot;
}
float* Fp8Scales::amax(int i) const { return parts(mem_, count(), config_.history).amax + i; }
unsigned long long* Fp8Scales::overflow() const {
  return parts(mem_, count(), config_.history).overflow;
}

void Fp8Scales::reset(cudaStream_t stream) {
  first_step_ = true;
  const int n = count(), len = config_.history;
  reset_kernel<<<grid_for(std::size_t(n) * len, 256), 256, 0, stream>>>(parts(mem_, n, len), n,
                                                                        len);
  XF_CUDA_CHECK_LAUNCH();
}

void Fp8Scales::update(cudaStream_t stream) {
  first_step_ = false;
  if (config_.recipe != Fp8Recipe::delayed) return;
  const int n = count(), len = config_.history;
  update_delayed_kernel<<<1, std::min(1024, 32 * n), 0, stream>>>(parts(mem_, n, len), n, len,
                                                                  config_.margin);
  XF_CUDA_CHECK_LAUNCH();
}

namespace {
std::vector<float> download(const float* p, int n) {
  std::vector<float> out(std::size_t(n), 0.f);
  XF_CUDA_CHECK(cudaDeviceSynchronize());
  XF_CUDA_CHECK(cudaMemcpy(out.data(), p, out.size() * sizeof(float), cudaMemcpyDeviceToHost));
  return out;
}
}  // namespace

std::vector<float> Fp8Scales::scales() const { return download(scale(0), count()); }
std::vector<float> Fp8Scales::amaxes() const { return download(amax(0), count()); }
unsigned long long Fp8Scales::overflow_count() const {
  unsigned long long v = 0;
  XF_CUDA_CHECK(cudaDeviceSynchronize());
  XF_CUDA_CHECK(cudaMemcpy(&v, overflow(), sizeof v, cudaMemcpyDeviceToHost));
  return v;
}

// ---- Casts -------------------------------------------------------------------------------------

namespace {
// The state's parts (the allocation starts at scale_inv(0)).
Parts parts_of(const Fp8Scales& s) {
  return parts(const_cast<float*>(s.scale_inv(0)), s.count(), s.config().history);
}
void check_index(const Fp8Scales& s, int i) {
  if (i < 0 || i >= s.count())
    XF_THROW(InvalidArgument,
             "fp8 tensor " + std::to_string(i) + " of " + std::to_string(s.count()));
}
// The current recipe's amax pass: this step's max|x| replaces the last.
void measure_amax(const __nv_bfloat16* x, std::size_t n, const Fp8Scales& s, int i,
                  cudaStream_t stream) {
  XF_CUDA_CHECK(cudaMemsetAsync(s.amax(i), 0, sizeof(float), stream));
  amax_kernel<<<grid_for(n / detail::kVec, 256), 256, 0, stream>>>(x, n / detail::kVec, s.amax(i));
  XF_CUDA_CHECK_LAUNCH();
}
}  // namespace

void fp8_cast(void* q, const __nv_bfloat16* x, std::size_t n, const Fp8Scales& s, int i,
              cudaStream_t stream) {
  check_index(s, i);
  if (n % detail::kVec)
    XF_THROW(InvalidArgument, "fp8_cast: " + std::to_string(n) + " elements: a multiple of 8");
  if (n == 0) return;
  const bool current = s.measures_own_amax();
  if (current) measure_amax(x, n, s, i, stream);
  const Parts p = parts_of(s);
  cast_kernel<<<grid_for(n / detail::kVec, 256), 256, 0, stream>>>(
      static_cast<std::uint8_t*>(q), x, n / detail::kVec, p, i, fp8_interp(s.format(i)), current,
      s.config().margin);
  XF_CUDA_CHECK_LAUNCH();
}

void fp8_cast_transpose(void* q, void* qt, const __nv_bfloat16* x, int rows, int cols,
                        const Fp8Scales& s, int i, cudaStream_t stream, bool recast,
                        __nv_bfloat16* dbias, float* scratch) {
  check_index(s, i);
  if (rows <= 0 || cols <= 0 || rows % 16 || cols % 16)
    XF_THROW(InvalidArgument, "fp8_cast_transpose: " + std::to_string(rows) + " x " +
                                  std::to_string(cols) + ": both multiples of 16");
  if (dbias && (!scratch || recast))
    XF_THROW(InvalidArgument, "fp8_cast_transpose: a bias gradient needs scratch, and no recast");
  const detail::CastTransposeTiles tiles{rows, cols, dbias != nullptr};
  const Fp8Output out{q, &s, i};
  auto launch = [&](const detail::Fp8Store& store) {
    tiles.launch(LoadBf16{x}, static_cast<std::uint8_t*>(qt), store, scratch, stream);
  };
  // A recipe measuring its own amax derives the scale from amax(i): measured here first, or, for
  // a recast, still the last cast's, which stands (its scale is held: the bytes of a fresh cast).
  if (!s.measures_own_amax() || recast) {
    launch(detail::fp8_store(out, false, false));
  } else {
    XF_CUDA_CHECK(cudaMemsetAsync(s.amax(i), 0, sizeof(float), stream));
    launch(detail::fp8_store(out, true, true));
    launch(detail::fp8_store(out, false, true));
  }
  if (dbias) tiles.sum(dbias, scratch, stream);
}

void check_fp8_output(const Fp8Output& out) {
  if (!out.q) return;
  if (!out.scales) XF_THROW(InvalidArgument, "fp8 output without its scales");
  check_index(*out.scales, out.i);
  if (reinterpret_cast<std::uintptr_t>(out.q) % 16)
    XF_THROW(InvalidArgument, "fp8 output: not 16-byte aligned");
}

void fp8_transpose(void* qt, const void* q, int rows, int cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0 || rows % 16 || cols % 16)
    XF_THROW(InvalidArgument, "fp8_transpose: " + std::to_string(rows) + " x " +
                                  std::to_string(cols) + ": both multiples of 16");
  const dim3 grid((cols + kTile - 1) / kTile, (rows + kTile - 1) / kTile);
  transpose_kernel<<<grid, 256, 0, stream>>>(static_cast<std::uint8_t*>(qt),
                                             static_cast<const std::uint8_t*>(q), rows, cols);
  XF_CUDA_CHECK_LAUNCH();
}

void fp8_dequantize(float* x, const void* q, std::size_t n, Fp8Format f, const float* scale_inv,
                    cudaStream_t stream) {
  if (n == 0) return;
  dequantize_kernel<<<grid_for(n, 256), 256, 0, stream>>>(x, static_cast<const std::uint8_t*>(q), n,
                                                          fp8_interp(f), scale_inv);
  XF_CUDA_CHECK_LAUNCH();
}

}  // namespace xfbench::kernels
