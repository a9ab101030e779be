// Tensor parallelism's arithmetic on ONE GPU (skipped without one; NCCL cannot put two ranks on
// one GPU, test_parallel runs them over NCCL on two): two ranks' shards of a block, or of a whole
// language model, each driven by its own thread as the trainer drives them, their all-reduce
// replaced by an in-process one, against the unsplit block or one GPU's model: the forward output,
// the input gradient and every parameter's gradient (the shards gathered), the loss and the
// weights after 3 steps. What every rank holds whole must come out the same bits on each.
#include <gtest/gtest.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>

#include "block_init.hpp"
#include "block_validate.hpp"
#include "kernels/models/language_model.hpp"
#include "parallel_validate.hpp"
#include "test_gpu.hpp"
#include "train_case.hpp"
#include "train_test_util.hpp"
#include "xfbench/xfbench.hpp"

using namespace xfbench;
using namespace xfbench::kernels;
using Values = LanguageModel::Values;

namespace {

// Tensor-parallel ranks on one GPU, rank r driven by thread r. The ranks take turns: one thread at
// a time enqueues its work and waits for it to finish (the ranks' blocks share GEMM plans and
// their workspaces on one device, so their kernels must not overlap). Each reduction waits for
// every rank to reach it; the last one adds the ranks' buffers in rank order (in fp32, rounded
// once to the storage type, as NCCL's sum of two) and writes the sum back to each.
class TakeTurns {
 public:
  explicit TakeTurns(int ranks) : buffers_(ranks) {}

  TpReduce reducer(int rank) {
    return [this, rank](void* data, std::size_t n, ElemType type, cudaStream_t) {
      XF_CUDA_CHECK(cudaDeviceSynchronize());  // this rank's work so far (side streams too)
      turn_.unlock();
      {
        std::unique_lock<std::mutex> lock(mutex_);
        buffers_[rank] = data, elements_ = n, type_ = type;
        if (++arrived_ == int(buffers_.size())) {
          sum();
          arrived_ = 0, ++generation_;
          wake_.notify_all();
        } else {
          const int generation = generation_;
          wake_.wait(lock, [&] { return generation_ != generation || failed_; });
        }
      }
      turn_.lock();
      std::lock_guard<std::mutex> lock(mutex_);
      if (failed_) XF_THROW(Unsupported, "another rank failed");
    };
  }

  // work(r) on thread r for every rank, taking turns; rethrows the first exception.
  void run(const std::function<void(int rank)>& work) {
    std::vector<std::exception_ptr> errors(buffers_.size());
    std::vector<std::thread> threads;
    for (std::size_t r = 0; r < buffers_.size(); ++r)
      threads.emplace_back([&, r] {
        turn_.lock();
        try {
          select_device(0);
          work(int(r));
          XF_CUDA_CHECK(cudaDeviceSynchronize());
        } catch (...) {
          errors[r] = std::current_exception();
          std::lock_guard<std::mutex> lock(mutex_);
          failed_ = true;
          wake_.notify_all();
        }
        turn_.unlock();
      });
    for (std::thread& t : threads) t.join();
    for (const std::exception_ptr& e : errors)
      if (e) std::rethrow_exception(e);
  }

 private:
  template <class T>
  void sum_as() {
    std::vector<std::vector<T>> parts(buffers_.size(), std::vector<T>(elements_));
    for (std::size_t r = 0; r < parts.size(); ++r)
      XF_CUDA_CHECK(
          cudaMemcpy(parts[r].data(), buffers_[r], elements_ * sizeof(T), cudaMemcpyDeviceToHost));
    std::vector<T> total(elements_);
    for (std::size_t i = 0; i < elements_; ++i) {
      float s = 0;
      for (const std::vector<T>& p : parts) s += float(p[i]);
      total[i] = T(s);
    }
    for (void* b : buffers_)
      XF_CUDA_CHECK(cudaMemcpy(b, total.data(), elements_ * sizeof(T), cudaMemcpyHostToDevice));
  }
  void sum() {
    if (type_ == ElemType::f16)
      sum_as<__half>();
    else if (type_ == ElemType::bf16)
      sum_as<__nv_bfloat16>();
    else
      sum_as<float>();
  }

  std::mutex turn_;  // held by the thread whose turn it is
  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<void*> buffers_;
  std::size_t elements_ = 0;
  ElemType type_ = ElemType::f32;
  int arrived_ = 0, generation_ = 0;
  bool failed_ = false;
};

std::size_t storage_bytes(Precision p) { return elem_size(input_type(p)); }

std::vector<unsigned char> raw(const TransformerBlock& b, const std::string& name) {
  std::vector<unsigned char> out(b.elements(name) * storage_bytes(b.config().precision));
  XF_CUDA_CHECK(cudaMemcpy(out.data(), b.tensor(name), out.size(), cudaMemcpyDeviceToHost));
  return out;
}

// Rank r's shard of the whole block's tensor `name` (the whole tensor when it is not split).
void copy_shard(const TransformerBlock& whole, TransformerBlock& shard, const std::string& name) {
  const BlockConfig& c = shard.config();
  const std::size_t e = storage_bytes(c.precision);
  const TpSplit split = tp_split(c, name);
  const std::vector<unsigned char> all = raw(whole, name);
  std::vector<unsigned char> mine(shard.elements(name) * e);
  for (std::size_t i = 0; i < shard.elements(name); ++i)
    std::memcpy(&mine[i * e], &all[split.whole_index(i, c.tp_rank, c.tp_size) * e], e);
  XF_CUDA_CHECK(cudaMemcpy(shard.tensor(name), mine.data(), mine.size(), cudaMemcpyHostToDevice));
}

// The ranks' shards of tensor `name` put together as the whole tensor (float64).
std::vector<double> gathered(const std::vector<std::unique_ptr<TransformerBlock>>& shards,
                             const std::string& name, const std::string& parameter) {
  const BlockConfig& c = shards[0]->config();
  const TpSplit split = tp_split(c, parameter);
  std::vector<double> all(shards[0]->elements(name) * (split.split ? c.tp_size : 1));
  for (const auto& s : shards) {
    const std::vector<double> mine =
        block::download(*s, name, block::storage_dtype(c.precision), nullptr);
    for (std::size_t i = 0; i < mine.size(); ++i)
      all[split.whole_index(i, s->config().tp_rank, c.tp_size)] = mine[i];
  }
  return all;
}

// The unsplit block and two ranks' shards of it, from the same parameters and inputs, forward and
// backward: every output and gradient within `tol` (relative L2) of the whole block's, and what
// both ranks hold whole the same bits on both. Returns the worst error (printed).
double expect_shards_equal_whole(const BlockConfig& config, double tol) {
  SCOPED_TRACE(config.describe());
  TransformerBlock whole(config);
  block::init_block(whole, 17, nullptr);
  whole.forward(nullptr, 3);
  whole.backward(nullptr, 3);

  TakeTurns group(2);
  std::vector<std::unique_ptr<TransformerBlock>> shards;
  for (int r = 0; r < 2; ++r) {
    BlockConfig c = config;
    c.tp_rank = r, c.tp_size = 2, c.tp_reduce = group.reducer(r);
    shards.push_back(std::make_unique<TransformerBlock>(c));
    for (const std::string& name : whole.parameters()) copy_shard(whole, *shards[r], name);
    for (const char* name : {"x", "enc", "dout"})
      if (whole.tensor(name)) copy_shard(whole, *shards[r], name);
  }
  EXPECT_EQ(shards[1]->elements("wqkv") * 2, whole.elements("wqkv"));
  EXPECT_EQ(shards[1]->elements("ln2_w"), whole.elements("ln2_w"));
  std::vector<Stream> streams(2);
  group.run([&](int r) {
    shards[r]->forward(streams[r], 3);
    shards[r]->backward(streams[r], 3);
  });

  const Dtype t = block::storage_dtype(config.precision);
  double worst = 0;
  std::string worst_name;
  auto check = [&](const std::string& name, const std::vector<double>& got) {
    const double e = compare(got, block::download(whole, name, t, nullptr)).rel_l2_error;
    EXPECT_LE(e, tol) << name;
    if (e >= worst) worst = e, worst_name = name;
  };
  for (const char* name : {"out", "dx", "denc"}) {
    if (!whole.tensor(name)) continue;
    EXPECT_TRUE(raw(*shards[0], name) == raw(*shards[1], name)) << name << " differs by rank";
    check(name, block::download(*shards[0], name, t, nullptr));
  }
  for (const std::string& p : whole.parameters()) {
    const std::string g = "d" + p;
    if (!tp_split(config, p).split)
      EXPECT_TRUE(raw(*shards[0], g) == raw(*shards[1], g)) << g << " differs by rank";
    check(g, gathered(shards, g, p));
  }
  std::printf("%s %s %s: worst rel L2 %.2e (%s), tolerance %.0e\n", config.name.c_str(),
              to_string(config.precision), to_string(config.backend), worst, worst_name.c_str(),
              tol);
  return worst;
}

BlockConfig sized(BlockConfig c, Precision p, AttentionBackend b, int seq) {
  c.batch = 2, c.seq = seq, c.precision = p, c.backend = b;
  // Off where the ranks draw their own masks (attention probabilities, T5's FFN inner); the
  // residual dropout is the same on every rank and on the whole block: on.
  c.attention_dropout = 0.f;
  c.residual_dropout = c.ffn_dropout ? 0.f : 0.1f;
  return c;
}

// The blocks of every kind: BERT (post-LN), GPT-2 (pre-LN, causal), T5's encoder (relative bias
// table split by heads) with the ReLU and the gated FFN, and its gated decoder (cross-attention).
std::vector<BlockConfig> kinds(Precision p, AttentionBackend b, int seq) {
  return {sized(bert_block(128, 4, 512), p, b, seq), sized(gpt2_block(128, 4, 512), p, b, seq),
          sized(t5_block(128, 4, 32, 256, false, false), p, b, seq),
          sized(t5_block(128, 4, 32, 256, false, true), p, b, seq),
          sized(t5_block(128, 4, 32, 256, true, true), p, b, seq)};
}

// bf16: each rank's partial product is rounded to bf16 before the sum (2^-9 relative), so the
// outputs and gradients differ from the whole block's by about that, a few times over after the
// norms (measured on the H100: at most 7e-3, fused and flash alike). The ReLU FFN (T5 v1.0) more:
// a pre-activation near 0 that the rounding moves across it switches its gradient on or off
// (measured 4.0e-2 in dwi and dln2_w, 6e-3 with the gated GELU on the same block), as it does
// between two bf16 implementations: block validation allows 6e-2 against float64 there
// (block_validate.hpp).
double bf16_tolerance(const BlockConfig& c) {
  return c.activation == Activation::relu ? 1e-1 : 2e-2;
}

}  // namespace

// fp32 (unfused attention): the shards differ from the whole block by summation order only.
// Measured on the H100: see the printed lines; the tolerance leaves ~10x.
TEST(TensorParallelBlock, ShardsEqualTheWholeBlockFp32) {
  SKIP_WITHOUT_GPU();
  for (const BlockConfig& c : kinds(Precision::fp32, AttentionBackend::unfused, 32))
    expect_shards_equal_whole(c, 1e-5);
}

// bf16 on the fused (cuDNN) and flash backends (bf16_tolerance).
TEST(TensorParallelBlock, ShardsEqualTheWholeBlockBf16) {
  SKIP_WITHOUT_GPU();
  for (const BlockConfig& c : kinds(Precision::bf16, AttentionBackend::fused, 64))
    expect_shards_equal_whole(c, bf16_tolerance(c));
  for (BlockConfig c : kinds(Precision::bf16, AttentionBackend::flash, 64)) {
    c.head_size = 64, c.heads = 2;  // flash takes head dim 64
    expect_shards_equal_whole(c, bf16_tolerance(c));
  }
}

// Llama: grouped-query attention (4 query heads over 2 key/value heads of 64: each rank 2 over
// 1), RoPE, the SwiGLU FFN's two halves split alike; bf16 on both backends that take it.
TEST(TensorParallelBlock, LlamaShardsEqualTheWholeBlock) {
  SKIP_WITHOUT_GPU();
  const RopeConfig rope{500000.0, 8.0, 1.0, 4.0, 8192};
  for (AttentionBackend b : {AttentionBackend::fused, AttentionBackend::flash}) {
    BlockConfig c = sized(llama_block(256, 4, 2, 64, 512, rope), Precision::bf16, b, 64);
    c.residual_dropout = 0.f;  // Llama has none
    expect_shards_equal_whole(c, bf16_tolerance(c));
  }
}

TEST(TensorParallelBlock, NeedsItsReduction) {
  SKIP_WITHOUT_GPU();
  BlockConfig c = kinds(Precision::bf16, AttentionBackend::fused, 64)[0];
  c.tp_size = 2;
  TransformerBlock b(c);
  EXPECT_THROW(b.forward(nullptr), InvalidArgument);
}

namespace {

// Two tensor-parallel ranks of a language model on one GPU against one GPU's model (whole_model,
// the case's validation reference): the first step's loss and gradients, the master weights
// after kParallelSteps steps, and the same bits of every unsplit parameter on both ranks (the
// errors printed).
void expect_model_shards_equal_one_gpu(TrainConfig c, double grad_tol, double weight_tol) {
  SCOPED_TRACE(c.describe());
  const train::WholeModel ref = train::whole_model(c, 0);
  TakeTurns group(2);
  std::vector<std::unique_ptr<LanguageModel>> ranks;
  for (int r = 0; r < 2; ++r) {
    TrainConfig k = c;
    k.tp_rank = r, k.tp_size = 2, k.tp_reduce = group.reducer(r);
    ranks.push_back(std::make_unique<LanguageModel>(k));
    ranks[r]->init_parameters(c.seed);
    ranks[r]->set_data(kernels::step_data(c));
  }
  std::vector<Stream> streams(2);
  group.run([&](int r) { ranks[r]->compute_gradients(streams[r]); });
  double hash[2];
  for (int r = 0; r < 2; ++r) {
    const float loss = ranks[r]->loss(nullptr);
    const train::ShardError g = train::shard_error(*ranks[r], Values::gradients, ref.grads);
    std::printf(
        "%s rank %d: loss %.6f (one GPU %.6f), gradients rel L2 %.2e worst (%s), %.2e "
        "all (tolerance %.0e)\n",
        c.describe().c_str(), r, loss, ref.loss, g.worst, g.tensor.c_str(), g.all, grad_tol);
    EXPECT_LE(std::abs(loss - ref.loss) / ref.loss, train::kTpLossTolerance / 3);
    EXPECT_LE(g.worst, grad_tol) << g.tensor;
    hash[r] = train::whole_part_hash(*ranks[r], true);
  }
  EXPECT_EQ(hash[0], hash[1]) << "unsplit gradients differ by rank";

  for (int r = 0; r < 2; ++r) ranks[r]->init_parameters(c.seed);
  group.run([&](int r) {
    for (int i = 0; i < train::kParallelSteps; ++i) ranks[r]->step(streams[r]);
  });
  for (int r = 0; r < 2; ++r) {
    const train::ShardError w = train::shard_error(*ranks[r], Values::master, ref.trained);
    std::printf("rank %d: master weights after %d steps rel L2 %.2e all, %.2e worst (%s)\n", r,
                train::kParallelSteps, w.all, w.worst, w.tensor.c_str());
    EXPECT_LE(w.all, weight_tol);
    hash[r] = train::whole_part_hash(*ranks[r], false);
  }
  EXPECT_EQ(hash[0], hash[1]) << "unsplit weights differ by rank";
}

}  // namespace

// The tolerances of the case's validation (parallel_validate.hpp) must sit above what two ranks
// differ from one GPU by: measured here at a third of them, with clipping active (max norm 0.5).
TEST(TensorParallelModel, ShardsEqualOneGpu) {
  SKIP_WITHOUT_GPU();
  for (LmKind kind : {LmKind::masked, LmKind::causal}) {
    TrainConfig c = xftest::tiny(kind, Precision::bf16);
    c.max_grad_norm = 0.5f;
    expect_model_shards_equal_one_gpu(c, train::kTpGradientTolerance / 3,
                                      train::kTpWeightTolerance / 3);
    c.precision = Precision::fp32, c.backend = AttentionBackend::unfused;
    expect_model_shards_equal_one_gpu(c, train::kTpGradientTolerance32 / 3,
                                      train::kTpWeightTolerance32 / 3);
  }
  // fp16 (loss scaling) with accumulation and checkpointing (each layer's forward runs twice).
  TrainConfig c = xftest::tiny(LmKind::causal, Precision::fp16);
  c.accum = 2, c.checkpointing = true;
  expect_model_shards_equal_one_gpu(c, train::kTpGradientTolerance / 3,
                                    train::kTpWeightTolerance / 3);
  // The tiny Llama (grouped-query attention 4:2, RoPE, SwiGLU), tied head and untied.
  for (bool tied : {true, false}) {
    TrainConfig l = xftest::tiny_llama(Precision::bf16, tied);
    l.max_grad_norm = 0.5f;
    expect_model_shards_equal_one_gpu(l, train::kTpGradientTolerance / 3,
                                      train::kTpWeightTolerance / 3);
  }
}

// The same at the multi-GPU cases' sizes, every layer (the rounding differences add up over the
// depth): bert-large s128 and gpt2-large s1024, bf16. About a minute; run on request
// (--gtest_also_run_disabled_tests): what parallel_validate.hpp's tp tolerances rest on.
TEST(TensorParallelModel, DISABLED_AtTheCasesSizes) {
  SKIP_WITHOUT_GPU();
  for (const char* name : {"bert-large", "gpt2-large"}) {
    TrainConfig c;
    c.model = lm_model(name);
    const bool masked = c.model.kind == LmKind::masked;
    c.seq = masked ? 128 : 1024, c.batch = masked ? 16 : 2;
    c.dropout = 0.f;
    expect_model_shards_equal_one_gpu(c, train::kTpGradientTolerance, train::kTpWeightTolerance);
  }
}
