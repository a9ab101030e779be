// ZeRO-3 (sharded weights) without a GPU: where each rank stores what of the flat buffers
// (ShardedRegion), the layout's region and memory plan, the configurations it rejects and the
// case names. Its step on two GPUs is in test_parallel.
#include <gtest/gtest.h>

#include <set>

#include "kernels/models/detail/language_model_layout.hpp"
#include "parallel_case.hpp"
#include "parallel_trainer.hpp"
#include "train_test_util.hpp"
#include "xfbench/error.hpp"

using namespace xfbench;
using namespace xfbench::kernels;
namespace layout = xfbench::kernels::detail;

namespace {

// Three layers of 1024-element groups between 256 elements before and 512 after.
ShardedRegion region(int rank, int ranks) {
  return ShardedRegion{256, 256 + 3 * 1024, 1024, rank, ranks};
}

}  // namespace

// Over the ranks, every element of the layers' part is stored by exactly one rank, each rank's
// stored indices are distinct and fill its buffers, and what lies outside the part is stored by
// every rank at the same place (before) or shifted by what the rank does not store (after).
TEST(ShardedRegion, EachLayerElementOnceAndTheRestEverywhere) {
  const std::size_t elements = 256 + 3 * 1024 + 512;
  for (int ranks : {2, 4}) {
    std::vector<int> owners(elements, 0);
    for (int r = 0; r < ranks; ++r) {
      const ShardedRegion z = region(r, ranks);
      EXPECT_EQ(z.chunk(), 1024u / ranks);
      EXPECT_EQ(z.stored_elements(elements), 256 + 3 * 1024 / ranks + 512);
      std::set<std::size_t> seen;
      for (std::size_t e = 0; e < elements; ++e) {
        if (!z.holds(e)) {
          EXPECT_THROW(z.stored(e), InvalidArgument) << e;
          continue;
        }
        ++owners[e];
        const std::size_t at = z.stored(e);
        EXPECT_LT(at, z.stored_elements(elements)) << e;
        EXPECT_TRUE(seen.insert(at).second) << "stored twice at " << at;
      }
      EXPECT_EQ(seen.size(), z.stored_elements(elements));
      EXPECT_EQ(z.stored(10), 10u);                                        // before: as it is
      EXPECT_EQ(z.stored(elements - 1), z.stored_elements(elements) - 1);  // after: shifted
      // rank r's chunk of layer 1 right after its chunk of layer 0
      const std::size_t c = z.chunk();
      EXPECT_EQ(z.stored(256 + 1024 + r * c), 256 + c);
    }
    for (std::size_t e = 0; e < elements; ++e) {
      const bool layer = e >= 256 && e < 256 + 3 * 1024;
      EXPECT_EQ(owners[e], layer ? 1 : ranks) << e;
    }
  }
  const ShardedRegion none;  // without ZeRO-3: everything stored where it is
  EXPECT_TRUE(none.holds(12345));
  EXPECT_EQ(none.stored(12345), 12345u);
  EXPECT_EQ(none.stored_elements(99), 99u);
}

// The layout's region is the layers' groups; the plan holds 1/N of them, the embeddings and
// head whole, and two windows each of a layer's weights and gradients.
TEST(ShardedLayout, LayersShardedWindowsPlanned) {
  TrainConfig c = xftest::tiny_llama(Precision::bf16, /*tied=*/false);
  c.model.layers = 8;  // more than the windows' four layers' worth: less memory than ZeRO-2
  c.ranks = 2, c.shard_optimizer = true;
  using R = TensorRole;  // a block's tensors as the layout sees them (odd sizes: padding)
  const std::vector<layout::BlockTensor> block = {{"x", R::input, 4096},
                                                  {"wqkv", R::parameter, 2 * 1000},
                                                  {"dwqkv", R::gradient, 2 * 1000},
                                                  {"ln1_w", R::parameter, 2 * 37},
                                                  {"dln1_w", R::gradient, 2 * 37},
                                                  {"out", R::output, 4096},
                                                  {"dx", R::input_grad, 4096},
                                                  {"dout", R::output_grad, 4096}};
  const layout::DeviceSizes sizes{4096, 8192, 1 << 20};
  const layout::ModelLayout zero2 = layout::make_layout(c, block, sizes);
  EXPECT_EQ(zero2.sharded.begin, zero2.sharded.end);  // nothing sharded
  c.shard_weights = true, c.rank = 1;
  const layout::ModelLayout z = layout::make_layout(c, block, sizes);
  ASSERT_EQ(z.groups.size(), 10u);  // embeddings, 8 layers, head
  EXPECT_EQ(z.sharded.begin, z.groups[1]);
  EXPECT_EQ(z.sharded.end, z.groups[9]);
  EXPECT_EQ(z.sharded.group, z.groups[2] - z.groups[1]);
  EXPECT_EQ(z.sharded.rank, 1);
  EXPECT_EQ(z.param("layer3.wqkv").offset, z.sharded.begin + 3 * z.sharded.group);
  const std::size_t P = z.param_elements, L = z.sharded.end - z.sharded.begin;
  auto part = [](const layout::ModelLayout& l, const std::string& what) {
    for (const MemoryPlan::Part& p : l.plan.parts)
      if (p.what == what) return p.bytes;
    return std::size_t(0);
  };
  EXPECT_EQ(part(zero2, "parameters"), P * 2);
  EXPECT_EQ(part(z, "parameters"), (P - L / 2) * 2);
  EXPECT_EQ(part(z, "gradients"), (P - L / 2) * 2);
  EXPECT_EQ(part(z, "ZeRO-3 layer windows"), 4 * z.sharded.group * 2);
  EXPECT_EQ(part(zero2, "ZeRO-3 layer windows"), 0u);
  EXPECT_LT(z.plan.total(), zero2.plan.total());
}

TEST(ShardedConfig, RejectsWhatItCannotRun) {
  TrainConfig c = xftest::tiny_llama();
  c.ranks = 2, c.shard_optimizer = c.shard_weights = true;
  EXPECT_NO_THROW(check_train_config(c));
  TrainConfig bad = c;
  bad.ranks = 1;  // one rank: nothing to shard over
  EXPECT_THROW(check_train_config(bad), InvalidArgument);
  bad = c, bad.shard_optimizer = false;
  EXPECT_THROW(check_train_config(bad), InvalidArgument);
  bad = c, bad.rank = 2;  // of 2
  EXPECT_THROW(check_train_config(bad), InvalidArgument);
  TrainConfig accumulated = c;  // each micro-batch's gradients scattered, then added
  accumulated.accum = 2;
  EXPECT_NO_THROW(check_train_config(accumulated));
}

TEST(ShardedNames, Zero3AfterTheKnobs) {
  TrainConfig c;
  c.model = lm_model("llama-3.1-8b");
  c.seq = 4096, c.batch = 1, c.dropout = 0.f;
  EXPECT_EQ(train::parallel_case_name(c, "", train::Parallelism::zero3, 4, true),
            "TrainStep/fused/llama-3.1-8b/bf16/seq:4096/batch:1/accum:1/ckpt:off/adamw:fused/"
            "zero3/gpus:4/p2p:on");
  const TrainConfig z = train::parallel_config(c, train::Parallelism::zero3, 4);
  EXPECT_EQ(z.ranks, 4);
  EXPECT_TRUE(z.shard_optimizer && z.shard_weights);
  const TrainConfig z2 = train::parallel_config(c, train::Parallelism::zero2, 4);
  EXPECT_TRUE(z2.shard_optimizer && !z2.shard_weights);
  EXPECT_STREQ(train::to_string(train::Parallelism::zero3), "zero3");
}
