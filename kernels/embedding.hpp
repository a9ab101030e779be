// Input embeddings of BERT, GPT-2 and Llama, forward and backward:
//   out[b, s, :] = word[ids[b, s]] + position[s] (+ type[type_ids[b, s]])   (BERT; GPT-2 has no
//   type, Llama neither type nor position: its positions are rotary, inside the blocks)
// The LayerNorm and dropout that follow are layernorm.hpp's.
//
// Storage T = __half, __nv_bfloat16 or float, math fp32. Tables are row-major [rows, C]; C % 8 == 0
// and every table / output pointer 16-byte aligned. Ids are not range-checked on the device (that
// would need a host sync): ids[i] must lie in [0, V), type_ids[i] in [0, num_types).
//
// The backward ADDS into the gradient buffers (+=): the word table is tied to the LM head, whose
// weight gradient GEMM writes dword first. It is deterministic (the same bits every run, no float
// atomics): the token positions are sorted by id (a stable radix sort), fixed tiles of the sorted
// tokens sum their runs of equal ids in order, and a run crossing tiles is finished by a second
// pass that adds the tiles' pieces in tile order. Skewed ids (one token everywhere) cost no more
// than uniform ones. dposition sums over the batch in order; dtype over per-position partials.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace xfbench::kernels {

constexpr int kMaxTokenTypes = 4;  // BERT uses 2

// out [B·S, C] = word[ids] + position[s] + type[type_ids]. type and type_ids are both null (GPT-2)
// or both set. The position table has at least S rows, or is null (Llama).
template <class T>
void embedding_forward(T* out, const int* ids, const int* type_ids, const T* word,
                       const T* position, const T* type, int B, int S, int C, int V,
                       cudaStream_t stream);

// Bytes of `scratch` embedding_backward needs (sort buffers and partial sums, 256-byte aligned
// pieces inside). Asks cub for its sort's temporary size, so it needs a current CUDA device.
std::size_t embedding_backward_scratch_bytes(int B, int S, int C, int V, int num_types);

// dword[ids[b, s]] += dout[b, s]; dposition[s] += Σ_b dout[b, s]; dtype[t] += Σ_{type_ids = t}
// dout. Any of dword, dposition, dtype may be null (not wanted); dtype needs type_ids and
// num_types <= kMaxTokenTypes. Deterministic, see above. `scratch` is device memory of
// embedding_backward_scratch_bytes(...) bytes.
template <class T>
void embedding_backward(T* dword, T* dposition, T* dtype, void* scratch, const T* dout,
                        const int* ids, const int* type_ids, int B, int S, int C, int V,
                        int num_types, cudaStream_t stream);

}  // namespace xfbench::kernels
