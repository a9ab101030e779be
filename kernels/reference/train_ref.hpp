// Float64 CPU references of the training-step kernels: embeddings, softmax cross-entropy, global
// gradient norm and AdamW (kernels/embedding.hpp, cross_entropy.hpp, grad_norm.hpp, adamw.hpp).
// Straight loops over dense row-major double arrays, for tests and small-size validation.
#pragma once

#include <cstddef>

#include "kernels/adamw.hpp"

namespace xfbench::kernels::ref {

// out [B·S, C] = word[ids] + position[s] (+ type[type_ids] when type is set).
void embedding_forward(double* out, const int* ids, const int* type_ids, const double* word,
                       const double* position, const double* type, int B, int S, int C);

// dword[ids] += dout rows; dposition[s] += Σ_b dout[b, s]; dtype[type_ids] += dout rows. Each
// output nullable.
void embedding_backward(double* dword, double* dposition, double* dtype, const double* dout,
                        const int* ids, const int* type_ids, int B, int S, int C);

// Per row i of logits [N, V]: losses[i] = logsumexp − x[t_i]; dlogits = (softmax − onehot) · scale
// (dlogits nullable); rows with t_i = kIgnoreIndex (-100): loss 0, dlogits 0.
void cross_entropy(double* losses, double* dlogits, const double* logits, const int* targets, int N,
                   int V, double scale);

// sqrt(Σ g²).
double global_norm(const double* g, std::size_t n);

// One torch.optim.AdamW step on n elements: g is the gradient as the optimizer sees it (already
// clipped and unscaled), step t >= 1; decay: whether config.weight_decay applies.
void adamw_step(double* p, double* m, double* v, const double* g, std::size_t n,
                const AdamWConfig& config, bool decay, int step);

}  // namespace xfbench::kernels::ref
