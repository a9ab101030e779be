// Float64 CPU reference of a language model's loss and parameter gradients
// (kernels/models/language_model.hpp's model: BERT masked LM or GPT-2 causal LM), written as HF's
// modules read: embeddings, the blocks of transformer_block_ref.hpp, the LM head, the mean
// cross-entropy over the rows whose target counts. Dropout is taken as off. Slow: for tiny
// configurations in tests.
#pragma once

#include <string>

#include "kernels/models/language_model_config.hpp"
#include "kernels/models/reference/transformer_block_ref.hpp"

namespace xfbench::kernels::ref {

// Parameter names (the GPU model's too): "word" [vocab, H] (unpadded here), "position" [positions,
// H], masked: "type" [token_types, H], "emb_ln_w", "emb_ln_b", head "head_w" [H, H], "head_b",
// "head_ln_w", "head_ln_b", "decoder_b" [vocab]; causal: "lnf_w", "lnf_b"; each block's as
// "layer<i>.<name>" (transformer_block.hpp's names).
std::vector<std::string> language_model_parameters(const LmModel& m);
std::string layer_parameter(int layer, const std::string& name);  // "layer3.wqkv"

// Returns the loss of `data` (the batch and seq of `c`); fills `grads` (when non-null) with the
// gradient of that loss for every parameter, under the parameter's name.
double language_model(const TrainConfig& c, const TokenBatch& data, const Tensors& params,
                      Tensors* grads);

}  // namespace xfbench::kernels::ref
