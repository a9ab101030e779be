// The shared transformer block's tensor placement (what a training step builds on): every tensor
// has a role; a block whose tensors the caller placed computes bit for bit what a block owning
// them does; two chained layers sharing their scratch give the same gradients as two separate
// layers (so nothing marked scratch is read across a forward and its backward); each layer's
// dropout seed draws its own masks. BERT (post-LN) and GPT-2 (pre-LN); GPU tests skip without one.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <map>
#include <string>
#include <vector>

#include "block_init.hpp"
#include "block_validate.hpp"
#include "kernels/models/transformer_block.hpp"
#include "test_gpu.hpp"
#include "test_host.hpp"
#include "xfbench/xfbench.hpp"

using namespace xfbench;
using kernels::BlockConfig;
using kernels::TensorRole;
using kernels::TransformerBlock;

namespace {

// Small BERT (post-LN) and GPT-2 (pre-LN) layers on the unfused backend (deterministic, so the
// comparisons can be exact), dropout on.
std::vector<BlockConfig> configs() {
  BlockConfig bert = kernels::bert_block(128, 2, 512), gpt2 = kernels::gpt2_block(128, 2, 512);
  for (BlockConfig* c : {&bert, &gpt2}) {
    c->batch = 2, c->seq = 64, c->backend = kernels::AttentionBackend::unfused;
  }
  return {bert, gpt2};
}

// A bump allocator over one cudaMalloc: a caller placing every tensor.
class Arena {
 public:
  explicit Arena(std::size_t bytes) { XF_CUDA_CHECK(cudaMalloc(&base_, bytes)), size_ = bytes; }
  ~Arena() { cudaFree(base_); }
  void* take(std::size_t bytes) {
    const std::size_t at = (used_ + 255) / 256 * 256;
    if (at + bytes > size_) return nullptr;
    used_ = at + bytes;
    return static_cast<char*>(base_) + at;
  }

 private:
  void* base_ = nullptr;
  std::size_t size_ = 0, used_ = 0;
};

std::vector<double> get(const TransformerBlock& b, const std::string& name, cudaStream_t s) {
  return block::download(b, name, Dtype::fp16, s);
}

TEST(BlockPlacement, RolesOfEveryTensor) {
  SKIP_WITHOUT_GPU();
  for (const BlockConfig& c : configs()) {
    TransformerBlock blk(c);
    EXPECT_EQ(blk.role("x"), TensorRole::input);
    EXPECT_EQ(blk.role("out"), TensorRole::output);
    EXPECT_EQ(blk.role("dx"), TensorRole::input_grad);
    EXPECT_EQ(blk.role("dout"), TensorRole::output_grad);
    EXPECT_EQ(blk.role("qkv"), TensorRole::saved);
    EXPECT_EQ(blk.role("dqkv"), TensorRole::scratch);
    for (const std::string& p : blk.parameters()) {
      EXPECT_EQ(blk.role(p), TensorRole::parameter) << p;
      EXPECT_EQ(blk.role("d" + p), TensorRole::gradient) << p;
    }
    EXPECT_THROW(blk.role("no_such_tensor"), InvalidArgument);
    EXPECT_EQ(blk.owned_bytes(), blk.device_bytes());
  }
}

TEST(BlockPlacement, PlacedBlockMatchesOwningBlock) {
  SKIP_WITHOUT_GPU();
  for (const BlockConfig& c : configs()) {
    SCOPED_TRACE(c.name);
    Stream s;
    TransformerBlock own(c);
    Arena arena(own.device_bytes() + 256 * own.tensor_names().size());
    std::map<std::string, TensorRole> asked;
    TransformerBlock placed(c, kernels::BlockPart::layer,
                            [&](const std::string& name, TensorRole role, std::size_t bytes) {
                              asked[name] = role;
                              return arena.take(bytes);
                            });
    EXPECT_EQ(placed.owned_bytes(), 0u);
    EXPECT_EQ(placed.device_bytes(), own.device_bytes());
    EXPECT_EQ(asked.size(), own.tensor_names().size());
    for (TransformerBlock* b : {&own, &placed}) {
      block::init_block(*b, 11, s);
      b->forward(s, 3);
      b->backward(s, 3);
    }
    for (const std::string& n : own.tensor_names()) {
      if (own.role(n) == TensorRole::scratch || own.role(n) == TensorRole::saved) continue;
      EXPECT_TRUE(get(own, n, s) == get(placed, n, s)) << n;
    }
  }
}

// Layer 1 then layer 2 (x2 = out1), backward in reverse (dout1 = dx2), as a model runs them. The
// shared run puts both layers' scratch at the same addresses and chains the buffers in place.
TEST(BlockPlacement, ChainedLayersMayShareScratch) {
  SKIP_WITHOUT_GPU();
  for (BlockConfig c : configs()) {
    SCOPED_TRACE(c.name);
    Stream s;
    auto seeded = [&](std::uint64_t seed) {
      BlockConfig k = c;
      k.dropout_seed = seed;
      return k;
    };
    // Separate layers, chained by copies.
    TransformerBlock a1(seeded(1)), a2(seeded(2));
    block::init_block(a1, 100, s), block::init_block(a2, 200, s);
    const std::size_t act = a1.elements("out") * 2;
    a1.forward(s, 5);
    XF_CUDA_CHECK(cudaMemcpyAsync(a2.tensor("x"), a1.tensor("out"), act, cudaMemcpyDefault, s));
    a2.forward(s, 5);
    a2.backward(s, 5);
    XF_CUDA_CHECK(cudaMemcpyAsync(a1.tensor("dout"), a2.tensor("dx"), act, cudaMemcpyDefault, s));
    a1.backward(s, 5);

    // Shared scratch, chained in place.
    Arena arena(8 * a1.device_bytes());
    std::map<std::string, void*> scratch;
    void* link = nullptr;   // out1 == x2
    void* dlink = nullptr;  // dx2 == dout1
    auto place = [&](int layer) {
      return [&, layer](const std::string& name, TensorRole role, std::size_t bytes) -> void* {
        if (role == TensorRole::scratch) {
          void*& p = scratch[name];
          if (!p) p = arena.take(bytes);
          return p;
        }
        if ((layer == 1 && role == TensorRole::output) || (layer == 2 && role == TensorRole::input))
          return link ? link : (link = arena.take(bytes));
        if ((layer == 1 && role == TensorRole::output_grad) ||
            (layer == 2 && role == TensorRole::input_grad))
          return dlink ? dlink : (dlink = arena.take(bytes));
        return arena.take(bytes);
      };
    };
    TransformerBlock b1(seeded(1), kernels::BlockPart::layer, place(1));
    TransformerBlock b2(seeded(2), kernels::BlockPart::layer, place(2));
    block::init_block(b1, 100, s);  // the same parameters and input as a1
    block::init_block(b2, 200, s);  // x and dout: overwritten by the chain below
    b1.forward(s, 5);
    b2.forward(s, 5);
    XF_CUDA_CHECK(cudaMemcpyAsync(b2.tensor("dout"), a2.tensor("dout"), act, cudaMemcpyDefault, s));
    b2.backward(s, 5);
    b1.backward(s, 5);

    EXPECT_TRUE(get(b2, "out", s) == get(a2, "out", s));
    EXPECT_TRUE(get(b1, "dx", s) == get(a1, "dx", s));
    for (const std::string& p : a1.parameters()) {
      EXPECT_TRUE(get(b1, "d" + p, s) == get(a1, "d" + p, s)) << "layer 1 d" << p;
      EXPECT_TRUE(get(b2, "d" + p, s) == get(a2, "d" + p, s)) << "layer 2 d" << p;
    }
  }
}

TEST(BlockPlacement, EachLayerDrawsItsOwnMasks) {
  SKIP_WITHOUT_GPU();
  BlockConfig c = configs()[1];
  Stream s;
  auto out = [&](std::uint64_t seed) {
    BlockConfig k = c;
    k.dropout_seed = seed;
    TransformerBlock b(k);
    block::init_block(b, 7, s);
    b.forward(s, 1);
    return get(b, "out", s);
  };
  EXPECT_TRUE(out(1) == out(1));
  EXPECT_GT(compare(out(1), out(2)).rel_l2_error, 1e-2);
}

}  // namespace
