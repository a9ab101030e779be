// Embedding forward/backward against the float64 reference, with and without token types, on
// id distributions that exercise the backward's tiles: uniform ids, a few heavy ids whose runs
// cross many tiles, one id everywhere, fewer tokens than a tile. The backward accumulates into
// random existing gradients and must give the same bits on every run.
//
// Tolerances (u = unit roundoff of T: 2^-11 fp16, 2^-8 bf16, 2^-24 fp32): forward 2 u relative +
// 2 u of max|ref| (one rounding of an fp32 sum of three stored values); gradients 4 u relative + 4
// u of max|ref| (fp32 sums rounded once into T; fp32 sums of up to 2,000 terms: 64 u).
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "kernels/embedding.hpp"
#include "kernels/reference/train_ref.hpp"
#include "train_test_util.hpp"

namespace xk = xfbench::kernels;
using namespace xftest;

namespace {

template <class T>
class Embedding : public GpuTest {};
using Types = ::testing::Types<__half, __nv_bfloat16, float>;
TYPED_TEST_SUITE(Embedding, Types);

enum class Ids { uniform, heavy, single };

std::vector<int> make_ids(std::size_t n, int V, Ids kind, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_int_distribution<int> any(0, V - 1);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<int> ids(n);
  for (auto& id : ids) {
    if (kind == Ids::single)
      id = 3;
    else if (kind == Ids::heavy && u(gen) < 0.6)
      id = u(gen) < 0.7 ? 5 : V - 1;  // long runs
    else
      id = any(gen);
  }
  return ids;
}

struct Case {
  int B, S, C, V;
  Ids ids;
  bool types;
};

template <class T>
double grad_ulps() {
  return std::is_same<T, float>::value ? 64 : 4;
}

template <class T>
void check(const Case& c) {
  SCOPED_TRACE("B=" + std::to_string(c.B) + " S=" + std::to_string(c.S) +
               " C=" + std::to_string(c.C) + " V=" + std::to_string(c.V) +
               " ids=" + std::to_string(int(c.ids)) + " types=" + std::to_string(c.types));
  const int N = c.B * c.S, num_types = 2, P = c.S + 3;  // position table longer than S
  const std::size_t n = std::size_t(N) * c.C;
  const auto ids = make_ids(N, c.V, c.ids, 7);
  std::vector<int> type_ids(N);
  for (int i = 0; i < N; ++i) type_ids[i] = (i * 7 / 5) % num_types;
  auto word = random_values<T>(std::size_t(c.V) * c.C, -1, 1, 1);
  auto pos = random_values<T>(std::size_t(P) * c.C, -1, 1, 2);
  auto type = random_values<T>(std::size_t(num_types) * c.C, -1, 1, 3);
  auto dout = random_values<T>(n, -1, 1, 4);
  DevInts d_ids(ids), d_types(type_ids);
  Dev<T> d_word(word), d_pos(pos), d_type(type), d_dout(dout), out(n);
  // Forward.
  xk::embedding_forward<T>(out.get(), d_ids.get(), c.types ? d_types.get() : nullptr, d_word.get(),
                           d_pos.get(), c.types ? d_type.get() : nullptr, c.B, c.S, c.C, c.V,
                           nullptr);
  std::vector<double> r_out(n);
  xk::ref::embedding_forward(r_out.data(), ids.data(), type_ids.data(), word.data(), pos.data(),
                             c.types ? type.data() : nullptr, c.B, c.S, c.C);
  EXPECT_TRUE(close_ulps<T>("out", out.host(), r_out, 2));
  // Backward into existing gradients (the values of the tables stand in for them), twice.
  xfbench::DeviceBuffer<char> scratch(
      xk::embedding_backward_scratch_bytes(c.B, c.S, c.C, c.V, c.types ? num_types : 0));
  std::vector<double> first[3];
  for (int run = 0; run < 2; ++run) {
    Dev<T> dword(word), dpos(pos), dtype(type);
    xk::embedding_backward<T>(dword.get(), dpos.get(), c.types ? dtype.get() : nullptr,
                              scratch.data(), d_dout.get(), d_ids.get(),
                              c.types ? d_types.get() : nullptr, c.B, c.S, c.C, c.V,
                              c.types ? num_types : 0, nullptr);
    std::vector<double> got[3] = {dword.host(), dpos.host(), dtype.host()};
    if (run == 1) {
      for (int k = 0; k < 3; ++k)
        EXPECT_EQ(got[k], first[k]) << "run-to-run difference, array " << k;
      break;
    }
    std::vector<double> r_word = word, r_pos = pos, r_type = type;
    xk::ref::embedding_backward(r_word.data(), r_pos.data(), c.types ? r_type.data() : nullptr,
                                dout.data(), ids.data(), type_ids.data(), c.B, c.S, c.C);
    EXPECT_TRUE(close_ulps<T>("dword", got[0], r_word, grad_ulps<T>()));
    EXPECT_TRUE(close_ulps<T>("dposition", got[1], r_pos, grad_ulps<T>()));
    EXPECT_TRUE(close_ulps<T>("dtype", got[2], r_type, grad_ulps<T>()));
    for (int k = 0; k < 3; ++k) first[k] = std::move(got[k]);
  }
}

TYPED_TEST(Embedding, MatchesReference) {
  const int C = std::is_same<TypeParam, float>::value ? 64 : 1024;
  for (const Case& c :
       {Case{3, 37, C, 50, Ids::uniform, true}, Case{4, 64, 64, 30522, Ids::uniform, true},
        Case{4, 96, 64, 1000, Ids::heavy, false},
        Case{2, 128, 1600 / (std::is_same<TypeParam, float>::value ? 2 : 1), 900, Ids::heavy, true},
        Case{2, 64, 8, 10, Ids::single, true}, Case{1, 20, 16, 7, Ids::heavy, true}})
    check<TypeParam>(c);
}

// Llama: no position table (its positions are rotary, inside the blocks): out is the word row
// exactly, and the backward adds into the word table alone; a vocabulary of 128,256.
TYPED_TEST(Embedding, WithoutPositionTable) {
  using T = TypeParam;
  const int B = 2, S = 64, C = 256, V = 128256, N = B * S;
  const auto ids = make_ids(N, V, Ids::heavy, 13);
  auto word = random_values<T>(std::size_t(V) * C, -1, 1, 1);
  auto dout = random_values<T>(std::size_t(N) * C, -1, 1, 4);
  DevInts d_ids(ids);
  Dev<T> d_word(word), d_dout(dout), out(std::size_t(N) * C);
  xk::embedding_forward<T>(out.get(), d_ids.get(), nullptr, d_word.get(), nullptr, nullptr, B, S, C,
                           V, nullptr);
  std::vector<double> r_out(std::size_t(N) * C);
  xk::ref::embedding_forward(r_out.data(), ids.data(), nullptr, word.data(), nullptr, nullptr, B, S,
                             C);
  EXPECT_TRUE(out.host() == r_out);
  xfbench::DeviceBuffer<char> scratch(xk::embedding_backward_scratch_bytes(B, S, C, V, 0));
  Dev<T> dword(word);
  xk::embedding_backward<T>(dword.get(), nullptr, nullptr, scratch.data(), d_dout.get(),
                            d_ids.get(), nullptr, B, S, C, V, 0, nullptr);
  std::vector<double> r_word = word;
  xk::ref::embedding_backward(r_word.data(), nullptr, nullptr, dout.data(), ids.data(), nullptr, B,
                              S, C);
  EXPECT_TRUE(close_ulps<T>("dword", dword.host(), r_word, grad_ulps<T>()));
}

// Skewed ids at a training shape: every token has the same id, so a scatter with float atomics
// would add 8,192 rows into one in a different order on each run.
TYPED_TEST(Embedding, BackwardIsDeterministic) {
  using T = TypeParam;
  const int B = 64, S = 128, C = 1024, V = 30522, N = B * S;
  auto ids = make_ids(N, V, Ids::heavy, 11);
  for (int i = 0; i < N; i += 2) ids[i] = 42;
  DevInts d_ids(ids);
  Dev<T> dout(random_values<T>(std::size_t(N) * C, -1, 1, 5));
  xfbench::DeviceBuffer<char> scratch(xk::embedding_backward_scratch_bytes(B, S, C, V, 0));
  std::vector<double> runs[2];
  for (auto& r : runs) {
    Dev<T> dword(std::vector<double>(std::size_t(V) * C, 0.0)), dpos(std::size_t(S) * C);
    XF_CUDA_CHECK(cudaMemset(dpos.get(), 0, dpos.buf.bytes()));
    xk::embedding_backward<T>(dword.get(), dpos.get(), nullptr, scratch.data(), dout.get(),
                              d_ids.get(), nullptr, B, S, C, V, 0, nullptr);
    r = dword.host();
  }
  EXPECT_TRUE(runs[0] == runs[1]);
}

TEST(EmbeddingArgs, RejectsBadInput) {
  EXPECT_THROW(xk::embedding_forward<__half>(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                             2, 4, 12, 10, nullptr),
               xfbench::InvalidArgument);  // C % 8 != 0
  EXPECT_THROW(xk::embedding_backward<__half>(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                              nullptr, 2, 4, 16, 10, 0, nullptr),
               xfbench::InvalidArgument);  // no dout
}

}  // namespace
