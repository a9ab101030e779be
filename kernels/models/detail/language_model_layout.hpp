// Where a language model's tensors live (language_model.hpp): the flat parameter buffer's
// segments, and the activation arena's slots, computed from the configuration and the tensors one
// block asks for. Pure host arithmetic once the block's list is known, so it is tested without a
// GPU; probe_block_tensors needs one (it builds the block).
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "kernels/models/language_model.hpp"
#include "kernels/models/transformer_block.hpp"

namespace xfbench::kernels::detail {

// cuBLASLt workspaces a step's GEMM plans hold: the shared one and the private ones of the
// blocks' four weight-gradient plans on their side stream (gemm.hpp, transformer_block.cu).
constexpr std::size_t kGemmWorkspaces = 5;

struct BlockTensor {
  std::string name;
  TensorRole role;
  std::size_t bytes;
};

// The tensors a block of this configuration asks its placement for, in the order it asks. Builds
// a block whose placement hands out addresses that are never backed (its constructor allocates
// nothing placed and touches none of it); GEMM plans and cuDNN graphs it builds stay cached.
std::vector<BlockTensor> probe_block_tensors(const BlockConfig& c);

struct ParamSlot {
  std::string name;          // language_model_ref.hpp's
  std::size_t offset = 0;    // elements into the flat buffers
  std::size_t elements = 0;  // stored (the word table with its padding rows)
  std::size_t used = 0;      // meaningful (the word table without them)
  bool decay = true;         // AdamW weight decay (HF: not for biases and LayerNorm)
  // Its place among the one-GPU model's parameters (its index there; its initialisation's seed),
  // also where tensor parallelism orders them otherwise.
  std::size_t order = 0;
};

struct ArenaSlot {
  std::size_t offset = 0, bytes = 0;  // into the activation arena, 256-byte aligned
};

struct ModelLayout {
  std::vector<ParamSlot> params;
  std::size_t param_elements = 0;  // flat buffer length (segments 128-element aligned)
  // Where the parameter groups begin: the embeddings (0), each layer, the LM head; multiples of
  // TrainConfig::ranks × 128 elements, as is param_elements.
  std::vector<std::size_t> groups;
  // Tensor parallel: the blocks' split parameters come first, [0, tp_split_elements), the rest is
  // whole on every rank (the gradient norm adds the first part over the ranks, the rest once); 0
  // without tensor parallelism.
  std::size_t tp_split_elements = 0;
  // ZeRO-3: what the flat buffers store of the layers' part (empty without shard_weights); the
  // buffers' length is sharded.stored_elements(param_elements).
  ShardedRegion sharded;
  std::map<std::string, ArenaSlot> arena;
  std::size_t arena_bytes = 0;
  MemoryPlan plan;

  const ParamSlot& param(const std::string& name) const;  // InvalidArgument if unknown
  const ArenaSlot& slot(const std::string& key) const;
};

// The arena key of block tensor `t` of layer `layer` (of `layers`): parameters and gradients have
// none (they are slices of the flat buffers, under "layer<i>.<name>"); inputs and outputs chain
// the layer boundaries "boundary<i>"; the gradients between layers ping-pong over "dgrad0/1";
// saved tensors are per layer, or shared with checkpointing; scratch is shared.
std::string arena_key(int layer, int layers, bool checkpointing, const BlockTensor& t);

// What the layout needs to know of the device: scratch of the LayerNorm / column-sum backward
// at the hidden width and of the embedding backward (both depend on the SM count), and the
// cuBLASLt workspaces the GEMM plans hold.
struct DeviceSizes {
  std::size_t norm_scratch = 0, embedding_scratch = 0, gemm_workspaces = 0;
};
DeviceSizes device_sizes(const TrainConfig& c);  // of the current device

// Lays out the parameters and the arena, and the memory plan.
ModelLayout make_layout(const TrainConfig& c, const std::vector<BlockTensor>& block,
                        const DeviceSizes& sizes);

}  // namespace xfbench::kernels::detail
