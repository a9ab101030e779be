#include "parallel_validate.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>

#include "kernels/comm/nccl_comm.hpp"
#include "train_case.hpp"
#include "xfbench/error.hpp"
#include "xfbench/memory.hpp"

namespace xfbench::train {
namespace {

using kernels::LanguageModel;

std::vector<float> read_master(const LanguageModel& m) {
  const LanguageModel::Flat f = m.flat();
  std::vector<float> v(f.elements);
  XF_CUDA_CHECK(cudaDeviceSynchronize());
  XF_CUDA_CHECK(cudaMemcpy(v.data(), f.master, v.size() * sizeof(float), cudaMemcpyDeviceToHost));
  return v;
}

// One GPU on the ranks' batches: its master weights before and after the steps and its first
// step's gradient norm.
struct Reference {
  std::vector<float> initial, trained;
  float grad_norm = 0;
  std::string how;
};

Reference reference(const kernels::TrainConfig& c, int device) {
  OnDevice on(device);
  const int N = c.ranks;
  kernels::TrainConfig rc = c;
  // one plain GPU, with the ranks' layout (the flat offsets the comparison goes by)
  rc.rank = 0, rc.shard_optimizer = rc.shard_weights = false;
  rc.batch = N * c.batch;
  std::unique_ptr<LanguageModel> model;
  std::vector<kernels::TokenBatch> data;
  Reference out;
  try {
    model = std::make_unique<LanguageModel>(rc);
    for (int k = 0; k < c.accum; ++k) {
      std::vector<kernels::TokenBatch> parts;
      for (int r = 0; r < N; ++r) parts.push_back(kernels::step_data(c, r)[k]);
      data.push_back(kernels::concatenate(parts));
    }
    out.how = "one GPU with " + std::to_string(N) + "x the batch";
  } catch (const Unsupported&) {  // N·b does not fit: the same samples accumulated
    rc.batch = c.batch, rc.accum = N * c.accum;
    model = std::make_unique<LanguageModel>(rc);
    for (int r = 0; r < N; ++r)
      for (const kernels::TokenBatch& b : kernels::step_data(c, r)) data.push_back(b);
    out.how = "one GPU with " + std::to_string(N) + "x the batch (accumulated)";
  }
  model->init_parameters(c.seed);
  model->set_data(data);
  out.initial = read_master(*model);
  for (int i = 0; i < kParallelSteps; ++i) {
    model->step(nullptr);
    if (i == 0) out.grad_norm = model->scalars(nullptr).grad_norm;
  }
  out.trained = read_master(*model);
  return out;
}

// Where the one-GPU reference does not fit (llama-3.1-8b): `c` cut to its first kReducedLayers
// layers; returns what the label adds.
std::string first_layers(kernels::TrainConfig& c) {
  const int layers = c.model.layers;
  c.model.layers = std::min(layers, kReducedLayers);
  return ", its first " + std::to_string(c.model.layers) + " of " + std::to_string(layers) +
         " layers (the whole model does not fit one GPU)";
}

// The first global rank for which `failed` is true on its process (-1: none).
int first_failing(int rank, bool failed) {
  const double worst = kernels::max_over_ranks(failed ? -double(rank) : -1e9);
  return worst <= -1e9 ? -1 : int(-worst);
}

// Throws ValidationError for the first global rank that failed, on any process (`failing`: this
// process's first, -1 if none; `why`: its reason).
void throw_first_failing(int failing, const std::string& why) {
  const int first = first_failing(failing, failing >= 0);
  if (first >= 0)
    XF_THROW(ValidationError,
             first == failing ? why : "rank " + std::to_string(first) + " differs (its output)");
}

std::string who(const ParallelTrainer& t, int local) {
  return "rank " + std::to_string(t.rank(local)) + " (GPU " + std::to_string(t.device(local)) + ")";
}

// A 52-bit FNV-1a hash of the weights (exact as a double, for max_over_ranks).
double weight_hash(const std::vector<unsigned char>& bytes) {
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char b : bytes) h = (h ^ b) * 1099511628211ULL;
  return double(h >> 12);
}

}  // namespace

WholeModel whole_model(const kernels::TrainConfig& c, int device) {
  OnDevice on(device);
  kernels::TrainConfig one = c;
  one.tp_size = 1, one.tp_rank = 0, one.tp_reduce = nullptr;
  LanguageModel model(one);
  model.init_parameters(c.seed);
  model.set_data(kernels::step_data(one));
  WholeModel out;
  model.compute_gradients(nullptr);
  out.loss = model.loss(nullptr);
  for (const std::string& p : model.parameters())
    out.grads[p] = model.download(p, LanguageModel::Values::gradients, nullptr);
  model.init_parameters(c.seed);
  for (int i = 0; i < kParallelSteps; ++i) model.step(nullptr);
  for (const std::string& p : model.parameters())
    out.trained[p] = model.download(p, LanguageModel::Values::master, nullptr);
  return out;
}

ShardError shard_error(const LanguageModel& m, LanguageModel::Values which,
                       const std::map<std::string, std::vector<double>>& whole) {
  const kernels::TrainConfig& c = m.config();
  const kernels::BlockConfig block = c.block();
  ShardError e;
  double num_all = 0, den_all = 0;
  for (const std::string& p : m.parameters()) {
    const std::string local = p.substr(p.find('.') + 1);
    const kernels::TpSplit split =
        p.compare(0, 5, "layer") == 0 ? kernels::tp_split(block, local) : kernels::TpSplit{};
    const std::vector<double> mine = m.download(p, which, nullptr);
    const std::vector<double>& ref = whole.at(p);
    double num = 0, den = 0;
    for (std::size_t i = 0; i < mine.size(); ++i) {
      const double r = ref.at(split.whole_index(i, c.tp_rank, c.tp_size));
      num += (mine[i] - r) * (mine[i] - r), den += r * r;
    }
    const double rel = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
    if (e.tensor.empty() || !(rel <= e.worst)) e.worst = rel, e.tensor = p;
    num_all += num, den_all += den;
  }
  e.all = den_all > 0 ? std::sqrt(num_all / den_all) : std::sqrt(num_all);
  return e;
}

double whole_part_hash(const LanguageModel& m, bool gradients) {
  const LanguageModel::Flat f = m.flat();
  const std::size_t e = f.element_bytes;
  std::vector<unsigned char> bytes((f.elements - f.tp_split) * e);
  XF_CUDA_CHECK(cudaDeviceSynchronize());
  XF_CUDA_CHECK(cudaMemcpy(
      bytes.data(), static_cast<const char*>(gradients ? f.grads : f.params) + f.tp_split * e,
      bytes.size(), cudaMemcpyDeviceToHost));
  return weight_hash(bytes);
}

namespace {

std::string validate_tensor_parallel(const kernels::TrainConfig& config,
                                     const std::vector<int>& devices) {
  kernels::TrainConfig c = config;
  c.dropout = 0.f;
  WholeModel ref;
  std::string depth;
  try {
    ref = whole_model(c, devices.front());
  } catch (const Unsupported&) {
    depth = first_layers(c);
    ref = whole_model(c, devices.front());
  }

  ParallelTrainer t(c, Parallelism::tp, devices);
  t.init_parameters(c.seed);
  for (int i = 0; i < t.local_ranks(); ++i) t.set_data(i, kernels::step_data(c, t.data_rank(i)));
  const bool four_bytes =
      c.precision == kernels::Precision::tf32 || c.precision == kernels::Precision::fp32;
  const double grad_tol = four_bytes ? kTpGradientTolerance32 : kTpGradientTolerance;
  const double weight_tol = four_bytes ? kTpWeightTolerance32 : kTpWeightTolerance;
  OnDevice on(devices.front());
  Stream stream;
  auto first_rank = [&](double v) { return kernels::max_over_ranks(t.rank(0) == 0 ? v : -1); };

  t.compute_gradients(stream);
  kernels::wait_for_stream(stream.get());  // polled: NCCL errors and the time-out end it
  std::vector<ShardError> grads;
  std::vector<float> losses;
  std::vector<double> grad_hashes;
  for (int i = 0; i < t.local_ranks(); ++i) {
    OnDevice rank_device(t.device(i));
    losses.push_back(t.model(i).loss(nullptr));
    grads.push_back(shard_error(t.model(i), LanguageModel::Values::gradients, ref.grads));
    grad_hashes.push_back(whole_part_hash(t.model(i), true));
  }
  const double rank0_grads = first_rank(grad_hashes[0]);

  t.init_parameters(c.seed);
  for (int i = 0; i < kParallelSteps; ++i) t.step(stream);
  kernels::wait_for_stream(stream.get());
  double worst_loss = 0, worst_grad = 0, worst_weights = 0;
  std::string worst_tensor, why;
  int failing = -1;
  std::vector<double> weight_hashes;
  for (int i = 0; i < t.local_ranks(); ++i) {
    OnDevice rank_device(t.device(i));
    weight_hashes.push_back(whole_part_hash(t.model(i), false));
  }
  const double rank0_weights = first_rank(weight_hashes[0]);
  for (int i = 0; i < t.local_ranks(); ++i) {
    OnDevice rank_device(t.device(i));
    const double loss = std::abs(losses[i] - ref.loss) / std::max(std::abs(ref.loss), 1e-30f);
    const ShardError weights = shard_error(t.model(i), LanguageModel::Values::master, ref.trained);
    worst_loss = std::max(worst_loss, loss);
    if (grads[i].worst >= worst_grad) worst_grad = grads[i].worst, worst_tensor = grads[i].tensor;
    worst_weights = std::max(worst_weights, weights.all);
    char buf[256];
    if (!(loss <= kTpLossTolerance))
      std::snprintf(buf, sizeof buf, ": loss %.6g, one GPU %.6g (rel %.2e > %.1e)", losses[i],
                    ref.loss, loss, kTpLossTolerance);
    else if (!(grads[i].worst <= grad_tol))
      std::snprintf(buf, sizeof buf, ": gradient of %s differs from one GPU's: rel L2 %.2e > %.1e",
                    grads[i].tensor.c_str(), grads[i].worst, grad_tol);
    else if (!(weights.all <= weight_tol))
      std::snprintf(buf, sizeof buf,
                    ": master weights after %d steps differ from one GPU's: rel L2 %.2e > %.1e",
                    kParallelSteps, weights.all, weight_tol);
    else if (grad_hashes[i] != rank0_grads)
      std::snprintf(buf, sizeof buf, ": gradients of the unsplit parameters differ from rank 0's");
    else if (weight_hashes[i] != rank0_weights)
      std::snprintf(buf, sizeof buf, ": unsplit weights differ from rank 0's");
    else
      continue;
    if (failing < 0) failing = t.rank(i), why = who(t, i) + buf;
  }
  throw_first_failing(failing, why);
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "tp %d == one GPU on the same batch%s: loss rel %.1e, gradients rel L2 %.1e (%s; "
                "<= %.0e), master weights after %d steps %.1e (<= %.0e); unsplit parameters the "
                "same bits on every rank",
                c.tp_size, depth.c_str(), worst_loss, worst_grad, worst_tensor.c_str(), grad_tol,
                kParallelSteps, worst_weights, weight_tol);
  return buf;
}

}  // namespace

std::string validate_parallel(const kernels::TrainConfig& config, Parallelism mode,
                              const std::vector<int>& devices, std::size_t bucket_bytes) {
  if (mode == Parallelism::tp) return validate_tensor_parallel(config, devices);
  kernels::TrainConfig c = config;
  c.dropout = 0.f;
  const int N = c.ranks;
  Reference ref;
  try {
    ref = reference(c, devices.front());
  } catch (const Unsupported&) {
    const std::string depth = first_layers(c);
    ref = reference(c, devices.front());
    ref.how += depth;
  }

  ParallelTrainer t(c, mode, devices, bucket_bytes);
  t.init_parameters(c.seed);
  for (int i = 0; i < t.local_ranks(); ++i) t.set_data(i, kernels::step_data(c, t.rank(i)));
  std::vector<float> norms(t.local_ranks());
  {
    OnDevice on(devices.front());
    Stream stream;
    for (int step = 0; step < kParallelSteps; ++step) {
      t.step(stream);
      if (step > 0) continue;
      // The ranks' streams do not synchronise with the legacy stream the reads below use.
      kernels::wait_for_stream(stream.get());
      for (int i = 0; i < t.local_ranks(); ++i) {
        OnDevice rank_device(t.device(i));
        norms[i] = t.model(i).scalars(nullptr).grad_norm;
      }
    }
    kernels::wait_for_stream(stream.get());
  }

  const bool four_bytes =
      c.precision == kernels::Precision::tf32 || c.precision == kernels::Precision::fp32;
  const double weight_tol = four_bytes ? kParallelWeightTolerance32 : kParallelWeightTolerance;
  const double rank0_hash =
      kernels::max_over_ranks(t.rank(0) == 0 ? weight_hash(t.weight_bytes(0)) : -1);
  double worst_weights = 0, worst_norm = 0;
  std::string why;  // of this process's first failing rank
  int failing = -1;
  for (int i = 0; i < t.local_ranks(); ++i) {
    double num = 0, den = 0;
    t.visit_master(i, [&](std::size_t offset, const std::vector<float>& v) {
      for (std::size_t j = 0; j < v.size(); ++j) {
        const double d = double(v[j]) - ref.trained[offset + j];
        num += d * d;
        den += double(ref.trained[offset + j]) * ref.trained[offset + j];
      }
    });
    const double weights = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
    const double norm = std::abs(norms[i] - ref.grad_norm) / std::max(ref.grad_norm, 1e-30f);
    worst_weights = std::max(worst_weights, weights);
    worst_norm = std::max(worst_norm, norm);
    char buf[256];
    if (!(weights <= weight_tol))
      std::snprintf(buf, sizeof buf, ": master weights differ from %s: rel L2 %.2e > %.1e",
                    ref.how.c_str(), weights, weight_tol);
    else if (!(norm <= kParallelNormTolerance))
      std::snprintf(buf, sizeof buf, ": first gradient norm %.6g, %s %.6g (rel %.2e > %.1e)",
                    norms[i], ref.how.c_str(), ref.grad_norm, norm, kParallelNormTolerance);
    else if (weight_hash(t.weight_bytes(i)) != rank0_hash)
      std::snprintf(buf, sizeof buf, ": its weights differ from rank 0's");
    else
      continue;
    if (failing < 0) failing = t.rank(i), why = who(t, i) + buf;
  }
  throw_first_failing(failing, why);
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "%d rank%s == %s after %d steps: master weights rel L2 %.1e (<= %.0e), first "
                "gradient norm rel %.1e",
                N, N == 1 ? "" : "s", ref.how.c_str(), kParallelSteps, worst_weights, weight_tol,
                worst_norm);
  return buf;
}

}  // namespace xfbench::train
