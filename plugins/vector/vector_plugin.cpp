// The Vector family: memory bandwidth of streaming operations (the seeds' `y = a * 1.2`, copy,
// triad, read-only sum, write-only fill) in fp32, fp16 and bf16, from 2^14 to 2^30 elements.
#include <cmath>
#include <string>
#include <vector>

#include "vector_kernels.hpp"
#include "xfbench/xfbench.hpp"

namespace xfbench::vector {
namespace {

struct Case {
  Op op;
  Dtype dtype;
  std::size_t n;
};

// Buffers of one case, filled with random inputs; the output poisoned.
struct Buffers {
  DeviceMemory a, b, c, y;
  DeviceBuffer<float> partials;
  Operands ops() const { return {a.get(), b.get(), c.get(), y.get(), partials.data()}; }
};

std::size_t inputs_of(Op op) { return op == Op::triad ? 2 : (op == Op::write ? 0 : 1); }

void run_case(benchmark::State& state, const Case& c) {
  const std::size_t bytes = c.n * size_of(c.dtype);
  const std::size_t buffers = inputs_of(c.op) + (c.op == Op::read ? 0 : 1);
  std::size_t free_b = 0, total_b = 0;
  XF_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  if (double(buffers * bytes) > 0.9 * double(free_b)) {
    XF_THROW(Unsupported, "needs " + std::to_string(buffers * bytes >> 20) + " MiB, " +
                              std::to_string(free_b >> 20) + " MiB free");
  }
  Stream stream;
  Buffers buf;
  if (c.op == Op::triad) {
    buf.b = DeviceMemory(bytes);
    buf.c = DeviceMemory(bytes);
    fill_uniform(buf.b.get(), c.n, c.dtype, 11, -1.0, 1.0, stream);
    fill_uniform(buf.c.get(), c.n, c.dtype, 12, -1.0, 1.0, stream);
  } else if (c.op != Op::write) {
    buf.a = DeviceMemory(bytes);
    fill_uniform(buf.a.get(), c.n, c.dtype, 10, -1.0, 1.0, stream);
  }
  if (c.op == Op::read) {
    buf.partials = DeviceBuffer<float>(reduction_partials());
  } else {
    buf.y = DeviceMemory(bytes);
  }
  const Operands x = buf.ops();
  auto poison_output = [&] {
    if (c.op == Op::read) {
      poison(buf.partials.data(), buf.partials.bytes(), stream);
    } else {
      poison(buf.y.get(), bytes, stream);
    }
  };

  if (should_validate()) {
    poison_output();
    launch(c.op, c.dtype, x, c.n, stream);
    if (std::size_t bad = count_mismatches(c.op, c.dtype, x, c.n, stream)) {
      XF_THROW(ValidationError, std::to_string(bad) + " of " +
                                    std::to_string(c.op == Op::read ? 1 : c.n) +
                                    " results differ from the float64 reference");
    }
  }
  Timing t = time_gpu(state, stream, [&](cudaStream_t s) { launch(c.op, c.dtype, x, c.n, s); });
  set_counters(state, t, {0, bytes_moved(c.op, c.n, c.dtype), c.dtype});
}

// Sizes as powers of two (default 14, 16, ..., 30) from --xfbench_vector_sizes.
std::vector<std::size_t> sizes() {
  const std::vector<long> exponents = flag_int_list(
      "vector_sizes", "Vector sizes as powers of two, e.g. 20,24,28 (default 14,16,...,30)", {},
      {4, 34, "power-of-two exponent"});
  std::vector<std::size_t> out;
  if (exponents.empty()) {
    for (int e = 14; e <= 30; e += 2) out.push_back(std::size_t(1) << e);
  }
  for (long e : exponents) out.push_back(std::size_t(1) << e);
  return out;
}

void register_cases() {
  const std::vector<std::string> ops = flag_choice_list(
      "vector_ops", "Vector ops (default scale,copy,triad,read,write)",
      {"scale", "copy", "triad", "read", "write"}, {"scale", "copy", "triad", "read", "write"});
  const std::vector<std::string> dtypes =
      flag_choice_list("vector_dtypes", "Vector dtypes (default fp32,fp16,bf16)",
                       {"fp32", "fp16", "bf16"}, {"fp32", "fp16", "bf16"});
  const std::vector<std::size_t> ns = sizes();
  // The default suite: the seeds' a*1.2 curve from 2^26 elements (256 MiB, several times any
  // L2) in fp32 and every op at 2^28; the smaller sizes, fp16/bf16 and the rest when a filter
  // selects them. A launch that reads or writes through the L2 (below 2^22 elements it fits; up
  // to 2^24 in part) measures latency and cache residency as much as bandwidth: on an H100 and an
  // H200 such sizes moved 1.3-13% with what ran before them in the process (a Matmul or a Memcpy
  // case: 112 -> 97 GB/s at 2^14; 3861 -> 3809 GB/s at 2^24), where the suite's cases must be
  // what they are run alone. Sizes given by flag are all core.
  const bool sized_by_flag = !flag_list("vector_sizes", "").empty();
  auto suite = [&](Op op, Dtype t, std::size_t n) {
    bool core = sized_by_flag ||
                (t == Dtype::fp32 &&
                 (n == (std::size_t(1) << 28) || (op == Op::scale && n >= (std::size_t(1) << 26))));
    return core ? Suite::core : Suite::extended;
  };
  for (const std::string& o : ops) {
    Op op = parse_op(o.c_str());
    for (const std::string& d : dtypes) {
      const Dtype t = parse_dtype(d);  // one of the choices above
      for (std::size_t n : ns) {
        Case c{op, t, n};
        add_case(
            CaseName("Vector").add(to_string(op)).add(d).add("n", (long long)n).str(),
            [c](benchmark::State& s) { run_case(s, c); }, Needs::gpu, suite(op, t, n));
      }
    }
  }
}

}  // namespace

}  // namespace xfbench::vector

XFBENCH_PLUGIN("vector", "1.0.0", "memory bandwidth: scale (a*1.2), copy, triad, read, write",
               xfbench::vector::register_cases)
