// Multi-GPU TrainStep without a GPU: the model layout's parameter groups for N ranks, the buckets
// over them, every rank's shard of every bucket, the case names, the GPU list, and the plugin
// listing the dp / zero2 cases (also under a 2-rank MPI launch where the build has MPI).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>

#include "kernels/comm/nccl_comm.hpp"
#include "kernels/models/detail/language_model_layout.hpp"
#include "parallel_case.hpp"
#include "parallel_plan.hpp"
#include "test_host.hpp"
#include "train_test_util.hpp"
#include "xfbench/error.hpp"

using namespace xfbench;
using namespace xfbench::kernels;
using xfbench::train::Bucket;
using xfbench::train::BucketPlan;
using xfbench::train::plan_buckets;
namespace layout = xfbench::kernels::detail;

namespace {

// A block asking for two parameters of odd sizes (fp16 bytes), so groups need padding.
std::vector<layout::BlockTensor> odd_block() {
  using R = TensorRole;
  return {{"x", R::input, 4096},       {"w", R::parameter, 2 * 1000}, {"dw", R::gradient, 2 * 1000},
          {"b", R::parameter, 2 * 37}, {"db", R::gradient, 2 * 37},   {"out", R::output, 4096},
          {"dx", R::input_grad, 4096}, {"dout", R::output_grad, 4096}};
}
const layout::DeviceSizes kSizes{4096, 8192, 1 << 20};

// Flat elements owned per rank, from each bucket's chunk segments (offsets from the chunk).
std::vector<int> owners(const BucketPlan& plan, const std::vector<ParamSegment>& params) {
  std::vector<int> owner(plan.elements, -1);
  for (int r = 0; r < plan.ranks; ++r) {
    const std::vector<std::vector<ParamSegment>> chunks = plan.chunk_segments(params, r);
    EXPECT_EQ(chunks.size(), plan.buckets.size());
    for (std::size_t k = 0; k < chunks.size() && k < plan.buckets.size(); ++k)
      for (const ParamSegment& s : chunks[k]) {
        EXPECT_LE(s.offset + s.count, plan.buckets[k].chunk) << "a segment past its chunk";
        const std::size_t flat = plan.chunk_begin(plan.buckets[k], r) + s.offset;
        for (std::size_t i = 0; i < s.count; ++i) {
          EXPECT_EQ(owner[flat + i], -1) << "element " << flat + i << " owned twice";
          owner[flat + i] = r;
        }
      }
  }
  return owner;
}

std::vector<ParamSegment> segments(const layout::ModelLayout& l) {
  std::vector<ParamSegment> out;
  for (const layout::ParamSlot& p : l.params) out.push_back({p.offset, p.elements, p.decay});
  return out;
}

}  // namespace

// One rank: the groups change nothing (every segment was 128-aligned already). N ranks: every
// group starts at a multiple of N·128, the buffer too, and parameters keep their order.
TEST(ParallelLayout, GroupsAlignedToRanks) {
  TrainConfig c = xftest::tiny(LmKind::masked);
  c.model.layers = 3;
  const layout::ModelLayout one = layout::make_layout(c, odd_block(), kSizes);
  ASSERT_EQ(one.groups.size(), 5u);  // embeddings, 3 layers, head
  std::size_t end = 0;
  for (const layout::ParamSlot& p : one.params) {  // each segment right after the last, 128-aligned
    EXPECT_EQ(p.offset, (end + 127) / 128 * 128) << p.name;
    end = p.offset + p.elements;
  }
  for (int ranks : {2, 3, 8}) {
    c.ranks = ranks;
    const layout::ModelLayout l = layout::make_layout(c, odd_block(), kSizes);
    ASSERT_EQ(l.groups.size(), 5u);
    EXPECT_EQ(l.groups.front(), 0u);
    for (std::size_t g : l.groups) EXPECT_EQ(g % (128u * ranks), 0u) << ranks;
    EXPECT_EQ(l.param_elements % (128u * ranks), 0u);
    EXPECT_EQ(l.param("layer0.w").offset, l.groups[1]);
    EXPECT_EQ(l.param("layer2.w").offset, l.groups[3]);
    EXPECT_EQ(l.param("head_w").offset, l.groups[4]);
    EXPECT_GE(l.param_elements, one.param_elements);
  }
}

// ZeRO-2's plan: AdamW's fp32 state of 1/N of the buffer (gradients reduced, weights gathered in
// place).
TEST(ParallelLayout, ShardedOptimizerPlansOneShard) {
  TrainConfig c = xftest::tiny(LmKind::causal, Precision::bf16);
  c.ranks = 4;
  const layout::ModelLayout dp = layout::make_layout(c, odd_block(), kSizes);
  c.shard_optimizer = true;
  const layout::ModelLayout z = layout::make_layout(c, odd_block(), kSizes);
  const std::size_t P = dp.param_elements, S = P / 4;
  EXPECT_EQ(dp.plan.total() - z.plan.total(), 12 * P - 12 * S);  // reduced and gathered in place
  EXPECT_EQ(z.plan.describe().find("shards"), std::string::npos);
}

// Buckets: whole groups from the end of the buffer, at least the cap (but the last), in the
// order the backward finishes them, covering the buffer once; each names the point completing it.
TEST(ParallelPlan, BucketsOfWholeGroupsInBackwardOrder) {
  // groups: embeddings [0, 4096), layers of 1024, head [8192, 8448)
  const std::vector<std::size_t> ready = {8192, 7168, 6144, 5120, 4096, 0};
  const BucketPlan p = plan_buckets(ready, 8448, 2, 2000);
  ASSERT_EQ(p.buckets.size(), 3u);
  EXPECT_EQ(p.buckets[0].begin, 6144u);
  EXPECT_EQ(p.buckets[0].end, 8448u);
  EXPECT_EQ(p.buckets[0].ready_point, 2);  // after layers 3 and 2 (points 1, 2)
  EXPECT_EQ(p.buckets[1].begin, 4096u);
  EXPECT_EQ(p.buckets[1].end, 6144u);
  EXPECT_EQ(p.buckets[1].ready_point, 4);
  EXPECT_EQ(p.buckets[2].begin, 0u);
  EXPECT_EQ(p.buckets[2].end, 4096u);
  EXPECT_EQ(p.buckets[2].ready_point, 5);
  // shards in the order of the flat buffer: the last bucket's chunk first
  EXPECT_EQ(p.shard_elements, 4224u);
  EXPECT_EQ(p.buckets[2].shard_offset, 0u);
  EXPECT_EQ(p.buckets[1].shard_offset, 2048u);
  EXPECT_EQ(p.buckets[0].shard_offset, 3072u);
  EXPECT_EQ(p.buckets[0].chunk, 1152u);
  // a cap of one element: a bucket per group; a huge cap: one bucket
  EXPECT_EQ(plan_buckets(ready, 8448, 2, 1).buckets.size(), 6u);
  const BucketPlan one = plan_buckets(ready, 8448, 2, std::size_t(1) << 40);
  ASSERT_EQ(one.buckets.size(), 1u);
  EXPECT_EQ(one.buckets[0].ready_point, 5);
}

// Every parameter element lands in exactly one rank's chunks, chunk segments keep the decay flag,
// the pieces of each rank's shard follow shard_offset, and with one rank the chunks' plans are the
// model's own (the same offsets) and its pieces the flat buffer in order.
TEST(ParallelPlan, ShardsCoverEveryParameterOnce) {
  for (int ranks : {1, 2, 3, 4}) {
    TrainConfig c = xftest::tiny(LmKind::masked);
    c.model.layers = 4, c.ranks = ranks;
    const layout::ModelLayout l = layout::make_layout(c, odd_block(), kSizes);
    std::vector<std::size_t> ready(l.groups.rbegin(), l.groups.rend());
    for (std::size_t cap : {std::size_t(1), std::size_t(5000), std::size_t(1) << 30}) {
      const BucketPlan p = plan_buckets(ready, l.param_elements, ranks, cap);
      std::size_t covered = 0;
      for (const Bucket& b : p.buckets) {
        EXPECT_EQ(b.chunk * ranks, b.end - b.begin);
        EXPECT_EQ(b.chunk % 8, 0u);
        covered += b.end - b.begin;
      }
      EXPECT_EQ(covered, l.param_elements);
      const std::vector<int> owner = owners(p, segments(l));
      for (const layout::ParamSlot& s : l.params)
        for (std::size_t i = 0; i < s.elements; ++i)
          ASSERT_GE(owner[s.offset + i], 0) << s.name << "[" << i << "] ranks " << ranks;
      std::size_t owned = 0;
      for (int o : owner) owned += o >= 0;
      std::size_t params = 0;
      for (const layout::ParamSlot& s : l.params) params += s.elements;
      EXPECT_EQ(owned, params);
      const std::vector<std::vector<ParamSegment>> mine = p.chunk_segments(segments(l), 0);
      for (std::size_t k = 0; k < mine.size(); ++k)  // decay kept
        for (const ParamSegment& s : mine[k]) {
          const std::size_t flat = p.chunk_begin(p.buckets[k], 0) + s.offset;
          for (const layout::ParamSlot& slot : l.params)
            if (flat >= slot.offset && flat < slot.offset + slot.elements)
              EXPECT_EQ(s.decay, slot.decay) << slot.name;
        }
      // The shard's pieces: each rank's chunks in shard_offset order, 8-aligned, the shard's size.
      for (int r = 0; r < ranks; ++r) {
        const std::vector<GradPieces::Piece> pieces = p.shard_pieces(r);
        ASSERT_EQ(pieces.size(), p.buckets.size());
        std::size_t shard = 0;
        for (std::size_t i = 0; i < pieces.size(); ++i) {
          const Bucket& b = p.buckets[p.buckets.size() - 1 - i];
          EXPECT_EQ(b.shard_offset, shard);
          EXPECT_EQ(pieces[i].offset, b.begin + std::size_t(r) * b.chunk);
          EXPECT_EQ(pieces[i].count, b.chunk);
          EXPECT_EQ(pieces[i].offset % 8, 0u);
          shard += pieces[i].count;
        }
        EXPECT_EQ(shard, p.shard_elements);
        // One rank: the pieces are the flat buffer in order (the norm adds what one GPU adds).
        if (ranks == 1)
          for (std::size_t i = 0; i < pieces.size(); ++i)
            EXPECT_EQ(pieces[i].offset, i == 0 ? 0 : pieces[i - 1].offset + pieces[i - 1].count);
      }
      if (ranks == 1) {  // one rank: the chunks' segments are the model's own
        std::vector<ParamSegment> flat_segments, model = segments(l);
        for (std::size_t k = 0; k < mine.size(); ++k)
          for (const ParamSegment& s : mine[k])
            flat_segments.push_back({p.chunk_begin(p.buckets[k], 0) + s.offset, s.count, s.decay});
        auto by_offset = [](const ParamSegment& a, const ParamSegment& b) {
          return a.offset < b.offset;
        };
        std::sort(flat_segments.begin(), flat_segments.end(), by_offset),
            std::sort(model.begin(), model.end(), by_offset);
        ASSERT_EQ(flat_segments.size(), model.size());
        for (std::size_t i = 0; i < model.size(); ++i) {
          EXPECT_EQ(flat_segments[i].offset, model[i].offset);
          EXPECT_EQ(flat_segments[i].count, model[i].count);
        }
      }
    }
  }
}

TEST(ParallelPlan, RejectsGroupsThatDoNotSplit) {
  EXPECT_THROW(plan_buckets({512, 0}, 1024, 3, 100), InvalidArgument);       // 1024 % 24
  EXPECT_THROW(plan_buckets({500, 0}, 1024, 2, 100), InvalidArgument);       // 524 % 16
  EXPECT_THROW(plan_buckets({512, 512, 0}, 1024, 2, 100), InvalidArgument);  // not decreasing
  EXPECT_THROW(plan_buckets({512}, 1024, 2, 100), InvalidArgument);          // no embeddings group
  EXPECT_THROW(plan_buckets({512, 0}, 1024, 0, 100), InvalidArgument);
  EXPECT_THROW(plan_buckets({512, 0}, 1024, 2, 100).chunk_segments({}, 2), InvalidArgument);
  EXPECT_THROW(plan_buckets({512, 0}, 1024, 2, 100).shard_pieces(-1), InvalidArgument);
}

TEST(ParallelNames, ParallelismGpusAndP2pAfterTheKnobs) {
  TrainConfig c;
  c.model = lm_model("bert-large");
  c.seq = 128, c.batch = 64;
  EXPECT_EQ(train::parallel_case_name(c, "", train::Parallelism::dp, 2, true),
            "TrainStep/fused/bert-large/bf16/seq:128/batch:64/accum:1/ckpt:off/adamw:fused/dp/"
            "gpus:2/p2p:on");
  EXPECT_EQ(train::parallel_case_name(c, "/layers:2", train::Parallelism::zero2, 8, false),
            "TrainStep/fused/bert-large/bf16/seq:128/batch:64/accum:1/ckpt:off/adamw:fused/"
            "layers:2/zero2/gpus:8/p2p:off");
}

// This process's GPUs (no MPI here): the first N visible, the ones given (--xfbench_gpus, parsed
// by the SDK), or Unsupported naming what is missing.
TEST(ParallelGpus, LocalDevices) {
  EXPECT_EQ(local_devices({}, 4, 2), (std::vector<int>{0, 1}));
  EXPECT_EQ(local_devices({}, 4), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(local_devices({2, 3}, 4, 2), (std::vector<int>{2, 3}));
  try {
    local_devices({}, 1, 2);
    ADD_FAILURE() << "one GPU for two ranks";
  } catch (const Unsupported& e) {
    EXPECT_EQ(e.message(), "needs 2 GPUs, 1 visible");
  }
  EXPECT_THROW(local_devices({0, 5}, 4, 2), Unsupported);
}

// The plugin lists the dp, zero2 and tp cases with no GPU (one rank: filter-only baselines), p2p
// on and off, and the cross product's variants with --xfbench_train_parallel.
TEST(ParallelPlugin, ListsTheMultiGpuCases) {
  // Listing needs no GPU: hide the GPUs so --xfbench_gpus=0,1 is not checked against them.
  const auto r = xftest::run_host(
      "--benchmark_list_tests --benchmark_filter='TrainStep.*/(dp|zero2)/' --xfbench_gpus=0,1",
      xftest::kNoGpu);
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* name :
       {"TrainStep/fused/bert-large/bf16/seq:128/batch:64/accum:1/ckpt:off/adamw:fused/dp/gpus:2/"
        "p2p:on",
        "TrainStep/fused/bert-large/bf16/seq:128/batch:64/accum:1/ckpt:off/adamw:fused/zero2/"
        "gpus:2/p2p:off",
        "TrainStep/fused/gpt2-large/bf16/seq:1024/batch:4/accum:1/ckpt:off/adamw:fused/zero2/"
        "gpus:2/p2p:on"})
    EXPECT_NE(r.out.find(name), std::string::npos) << name << "\n" << r.out;
  const auto d = xftest::run_host("--benchmark_list_tests --xfbench_gpus=0,1",
                                  xftest::kNoGpu);  // default suite
  ASSERT_EQ(d.code, 0) << d.err;
  EXPECT_NE(d.out.find("adamw:fused/dp/gpus:2/p2p:on"), std::string::npos);
  EXPECT_NE(d.out.find("bert-large/bf16/seq:128/batch:64/accum:1/ckpt:off/adamw:fused/tp:2/gpus:2/"
                       "p2p:on"),
            std::string::npos);
  EXPECT_NE(d.out.find("gpt2-large/bf16/seq:1024/batch:4/accum:1/ckpt:off/adamw:fused/tp:2/"
                       "gpus:2/p2p:on"),
            std::string::npos);
  EXPECT_EQ(d.out.find("/p2p:off"), std::string::npos);  // not this environment's
  EXPECT_EQ(d.out.find("/zero3/"), std::string::npos);   // on request only
  const auto z = xftest::run_host(
      "--benchmark_list_tests --benchmark_filter='/zero3/' --xfbench_train_models=llama-3.1-8b "
      "--xfbench_train_seqs=4096 --xfbench_train_batches=1 --xfbench_train_parallel=zero3 "
      "--xfbench_gpus=0,1,2,3",
      xftest::kNoGpu);
  ASSERT_EQ(z.code, 0) << z.err;
  EXPECT_NE(z.out.find("TrainStep/fused/llama-3.1-8b/bf16/seq:4096/batch:1/accum:1/ckpt:off/"
                       "adamw:fused/zero3/gpus:4/p2p:on"),
            std::string::npos)
      << z.out;
  const auto g = xftest::run_host(
      "--benchmark_list_tests --benchmark_filter='/(dp|zero2)/' --xfbench_train_models=gpt2 "
      "--xfbench_train_layers=2 --xfbench_train_parallel=zero2 --xfbench_gpus=1,0,2",
      xftest::kNoGpu);
  ASSERT_EQ(g.code, 0) << g.err;
  EXPECT_NE(g.out.find("/layers:2/zero2/gpus:3/p2p:on"), std::string::npos) << g.out;
  EXPECT_EQ(g.out.find("/dp/"), std::string::npos) << g.out;
  // tp over 3 GPUs: bert-large's 16 heads do not split, so its cases list (and skip when run)
  // instead of failing the run; only tp's.
  const auto t = xftest::run_host(
      "--benchmark_list_tests --benchmark_filter='/(dp|tp:3)/' --xfbench_train_parallel=tp "
      "--xfbench_gpus=0,1,2",
      xftest::kNoGpu);
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_NE(t.out.find("bert-large/bf16/seq:128/batch:64/accum:1/ckpt:off/adamw:fused/tp:3/"
                       "gpus:3/p2p:on"),
            std::string::npos)
      << t.out;
  EXPECT_EQ(t.out.find("/dp/"), std::string::npos) << t.out;
  for (const char* mode : {"pp", "tp:2"}) {
    const auto bad =
        xftest::run_host(std::string("--benchmark_list_tests --xfbench_train_parallel=") + mode);
    EXPECT_EQ(bad.code, 2) << mode << "\n" << bad.out;
    EXPECT_NE(bad.err.find("is not dp, zero2, zero3 or tp"), std::string::npos) << bad.err;
  }
}
