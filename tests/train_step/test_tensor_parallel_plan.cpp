// Tensor-parallel TrainStep without a GPU: what each rank's shard of a block is (its sizes, which
// part of every whole parameter it holds), the configurations it rejects, the model layout that
// puts the split parameters first, and the case names.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/models/detail/language_model_layout.hpp"
#include "parallel_case.hpp"
#include "parallel_trainer.hpp"
#include "train_test_util.hpp"
#include "xfbench/error.hpp"

using namespace xfbench;
using namespace xfbench::kernels;
namespace layout = xfbench::kernels::detail;

namespace {

// The whole tensor's element count of parameter `name` of block `c`, from the split description
// or, unsplit, from the block's widths.
std::size_t whole_elements(const BlockConfig& c, const std::string& name) {
  const TpSplit s = tp_split(c, name);
  if (s.split) return s.elements();
  return std::size_t(c.hidden);  // norms, bo, bout
}

// Llama with grouped-query attention: 8 query heads over 4 key/value heads of 16.
BlockConfig small_llama() { return llama_block(128, 8, 4, 16, 256, RopeConfig{}); }

// Small blocks of every kind: BERT (post-LN), GPT-2 (pre-LN), T5 encoder and gated decoder, Llama.
std::vector<BlockConfig> blocks() {
  return {bert_block(128, 4, 512), gpt2_block(128, 4, 512),
          t5_block(128, 4, 48, 256, /*decoder=*/false, /*gated=*/false),
          t5_block(128, 4, 48, 256, /*decoder=*/true, /*gated=*/true), small_llama()};
}

const char* kParameters[] = {"wqkv",     "bqkv",     "wo",        "bo",       "ln1_w",      "ln1_b",
                             "rel_bias", "wq_cross", "wkv_cross", "wo_cross", "ln_cross_w", "wi",
                             "bi",       "wout",     "bout",      "ln2_w",    "ln2_b"};

}  // namespace

// A rank computes heads / tp heads of the same head dim and intermediate / tp FFN columns; one
// rank is the block itself.
TEST(TensorParallelSplit, ShardSizes) {
  BlockConfig c = bert_block(1024, 16, 4096);
  EXPECT_EQ(c.shard().heads, 16);
  EXPECT_EQ(c.shard().head_size, 0);
  c.tp_size = 2, c.tp_rank = 1;
  const BlockConfig s = c.shard();
  EXPECT_EQ(s.heads, 8);
  EXPECT_EQ(s.head_dim(), 64);
  EXPECT_EQ(s.attention_width(), 512);
  EXPECT_EQ(s.intermediate, 2048);
  EXPECT_EQ(s.hidden, 1024);
  BlockConfig t5 = t5_block(1024, 16, 128, 2816, true, true);  // d_kv above hidden / heads
  t5.tp_size = 4;
  EXPECT_EQ(t5.shard().heads, 4);
  EXPECT_EQ(t5.shard().head_dim(), 128);
  EXPECT_EQ(t5.shard().intermediate, 704);
  EXPECT_NE(c.describe().find("tensor-parallel rank 1 of 2"), std::string::npos) << c.describe();
  BlockConfig llama = small_llama();  // each rank: 2 query heads per key/value head, as the whole
  llama.tp_size = 4;
  EXPECT_EQ(llama.shard().heads, 2);
  EXPECT_EQ(llama.shard().kv_head_count(), 1);
  EXPECT_EQ(llama.shard().qkv_width(), (2 + 2 * 1) * 16);
  EXPECT_EQ(llama.shard().intermediate, 64);
}

// Over the ranks, the shards of every split parameter hold each element of the whole tensor
// exactly once, each shard 1/tp of it; the norms and row-parallel biases are not split.
TEST(TensorParallelSplit, ShardsCoverEveryWholeElementOnce) {
  for (const BlockConfig& c : blocks()) {
    for (const char* name : kParameters) {
      const TpSplit s = tp_split(c, name);
      const std::string n = name;
      const bool unsplit = n.rfind("ln", 0) == 0 || n == "bo" || n == "bout";
      EXPECT_EQ(s.split, !unsplit) << c.name << " " << n;
      if (!s.split) continue;
      const std::size_t whole = whole_elements(c, n);
      for (int tp : {2, 4}) {
        std::vector<int> seen(whole, 0);
        for (int r = 0; r < tp; ++r)
          for (std::size_t i = 0; i < whole / tp; ++i) ++seen.at(s.whole_index(i, r, tp));
        for (std::size_t j = 0; j < whole; ++j)
          ASSERT_EQ(seen[j], 1) << c.name << " " << n << " tp " << tp << " element " << j;
      }
    }
  }
  // Where rank 1 of 2 starts: the second half of Q's rows (then of K's, V's); of wo's columns.
  const BlockConfig c = bert_block(128, 4, 512);
  const std::size_t H = 128, A = 128;
  EXPECT_EQ(tp_split(c, "wqkv").whole_index(0, 1, 2), A / 2 * H);
  EXPECT_EQ(tp_split(c, "wqkv").whole_index(A / 2 * H, 1, 2), (A + A / 2) * H);  // K's rows
  EXPECT_EQ(tp_split(c, "wo").whole_index(0, 1, 2), A / 2);
  EXPECT_EQ(tp_split(c, "wo").whole_index(A / 2, 1, 2), A + A / 2);  // the next row
  EXPECT_EQ(tp_split(c, "bi").whole_index(3, 1, 2), 256u + 3);
  EXPECT_EQ(tp_split(c, "wqkv").whole_index(5, 0, 1), 5u);  // one rank: the whole tensor
  // Grouped-query attention: Q has A rows, K and V each KV (= A / 2) rows; rank 1 of 2 holds the
  // second half of each, its K after its A / 2 rows of Q.
  const BlockConfig l = small_llama();
  const std::size_t KV = 64;
  EXPECT_EQ(tp_split(l, "wqkv").elements(), (A + 2 * KV) * H);
  EXPECT_EQ(tp_split(l, "wqkv").whole_index(A / 2 * H, 1, 2), (A + KV / 2) * H);  // K's rows
  EXPECT_EQ(tp_split(l, "wqkv").whole_index((A / 2 + KV / 2) * H, 1, 2),
            (A + KV + KV / 2) * H);                                          // V's
  EXPECT_EQ(tp_split(l, "wi").whole_index(128 * H, 1, 2), (256 + 128) * H);  // up's half
}

namespace {
// check_block_config(c) throws InvalidArgument saying `why`.
void expect_rejected(const BlockConfig& c, const std::string& why) {
  try {
    check_block_config(c);
    ADD_FAILURE() << "accepted: " << c.describe();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(e.message().find(why), std::string::npos) << e.message();
  }
}
}  // namespace

TEST(TensorParallelSplit, RejectsWhatDoesNotSplit) {
  BlockConfig c = bert_block(1024, 16, 4096);
  c.tp_size = 3;  // 16 heads
  expect_rejected(c, "16 heads do not split over tensor-parallel size 3");
  c = small_llama();  // 8 query heads over 8 ranks, but 4 key/value heads
  c.tp_size = 8;
  expect_rejected(c, "4 key/value heads do not split over tensor-parallel size 8");
  c.tp_size = 4;
  EXPECT_NO_THROW(check_block_config(c));
  c = bert_block(1024, 16, 4104);  // 4104 / 2 is not a multiple of 8
  c.tp_size = 2;
  EXPECT_THROW(check_block_config(c), InvalidArgument);
  c = bert_block(1024, 16, 4096);
  c.tp_size = 2, c.tp_rank = 2;
  EXPECT_THROW(check_block_config(c), InvalidArgument);
  c.tp_rank = 0, c.tp_size = 0;
  EXPECT_THROW(check_block_config(c), InvalidArgument);
  c.tp_size = 2;
  EXPECT_NO_THROW(check_block_config(c));
  EXPECT_THROW(check_block_config(c, BlockPart::ffn), InvalidArgument);  // the whole layer only

  TrainConfig t = xftest::tiny(LmKind::masked);
  t.tp_size = 2;
  EXPECT_NO_THROW(check_train_config(t));
  t.ranks = 2;  // with data parallelism
  EXPECT_THROW(check_train_config(t), Unsupported);
  t.ranks = 1, t.tp_size = 3;  // 4 heads
  EXPECT_THROW(check_train_config(t), InvalidArgument);
}

// The layout of a tensor-parallel model: the split parameters of every layer first, then the
// one-GPU layout's order of the rest; each keeps its one-GPU index (its initialisation seed). One
// rank: the one-GPU layout.
TEST(TensorParallelLayout, SplitParametersFirstInTheirOneGpuOrder) {
  TrainConfig c = xftest::tiny(LmKind::causal);
  c.model.layers = 3;
  std::vector<layout::BlockTensor> block;
  for (const char* name : {"wqkv", "bqkv", "wo", "bo", "ln1_w", "ln1_b", "wi", "bi", "wout", "bout",
                           "ln2_w", "ln2_b"}) {
    const std::size_t whole = whole_elements(c.block(), name);
    block.push_back({name, TensorRole::parameter, 2 * whole});
    block.push_back({std::string("d") + name, TensorRole::gradient, 2 * whole});
  }
  block.push_back({"x", TensorRole::input, 4096});
  const layout::DeviceSizes sizes{4096, 8192, 1 << 20};
  const layout::ModelLayout one = layout::make_layout(c, block, sizes);
  EXPECT_EQ(one.tp_split_elements, 0u);
  for (std::size_t i = 0; i < one.params.size(); ++i) EXPECT_EQ(one.params[i].order, i);

  c.tp_size = 2, c.tp_rank = 1;
  for (layout::BlockTensor& t : block)  // the shards' sizes
    if (tp_split(c.block(), t.name).split || tp_split(c.block(), t.name.substr(1)).split)
      t.bytes /= 2;
  const layout::ModelLayout tp = layout::make_layout(c, block, sizes);
  ASSERT_EQ(tp.params.size(), one.params.size());
  const std::size_t split = 6 * 3;  // wqkv, bqkv, wo, wi, bi, wout of 3 layers
  EXPECT_EQ(tp.params[0].name, "layer0.wqkv");
  EXPECT_EQ(tp.params[split - 1].name, "layer2.wout");
  EXPECT_EQ(tp.params[split].name, "word");
  EXPECT_EQ(tp.tp_split_elements, tp.params[split].offset);
  EXPECT_EQ(tp.param("layer1.wqkv").elements * 2, one.param("layer1.wqkv").elements);
  EXPECT_EQ(tp.param("layer1.ln1_w").elements, one.param("layer1.ln1_w").elements);
  for (const layout::ParamSlot& p : tp.params) {
    EXPECT_EQ(p.order, one.param(p.name).order) << p.name;
    EXPECT_EQ(p.decay, one.param(p.name).decay) << p.name;
    const bool layer = p.name.rfind("layer", 0) == 0;
    const std::string local = p.name.substr(p.name.find('.') + 1);
    EXPECT_EQ(p.offset < tp.tp_split_elements, layer && tp_split(c.block(), local).split) << p.name;
  }
}

TEST(TensorParallelNames, SizeIsTheGpuCount) {
  TrainConfig c;
  c.model = lm_model("gpt2-large");
  c.seq = 1024, c.batch = 4;
  EXPECT_EQ(train::parallel_case_name(c, "", train::Parallelism::tp, 2, true),
            "TrainStep/fused/gpt2-large/bf16/seq:1024/batch:4/accum:1/ckpt:off/adamw:fused/tp:2/"
            "gpus:2/p2p:on");
  const TrainConfig tp = train::parallel_config(c, train::Parallelism::tp, 2);
  EXPECT_EQ(tp.tp_size, 2);
  EXPECT_EQ(tp.ranks, 1);
  const TrainConfig dp = train::parallel_config(c, train::Parallelism::dp, 2);
  EXPECT_EQ(dp.tp_size, 1);
  EXPECT_EQ(dp.ranks, 2);
}
