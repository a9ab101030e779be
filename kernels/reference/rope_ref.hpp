// Float64 CPU reference of the rotary position embeddings (rope.hpp) on the same packed QKV layout:
// rows of tokens = B·S (position = row % seq), each [NH q heads | NKV k heads | NKV v heads] of D.
// cos/sin of p·f_i in float64 (f_i from rope_inv_freq); v is left as it is.
#pragma once

#include "kernels/rope.hpp"

namespace xfbench::kernels::ref {

// q and k heads rotated by the position's angles, in place.
void rope_forward(double* qkv, const RopeConfig& config, int tokens, int seq, int NH, int NKV,
                  int D);
// The inverse (transposed) rotation of the q and k gradients, in place.
void rope_backward(double* dqkv, const RopeConfig& config, int tokens, int seq, int NH, int NKV,
                   int D);

}  // namespace xfbench::kernels::ref
