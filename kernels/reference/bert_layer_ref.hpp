// Float64 CPU reference of kernels/bert_layer.hpp's BertLayer (and its parts), forward and
// backward, with the same parameter names. Slow: for validation at small shapes.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "kernels/bert_layer.hpp"

namespace xfbench::kernels::ref {

using Tensors = std::map<std::string, std::vector<double>>;

// `in` holds "x", the part's parameters and (for a backward) "dout". Fills `out` with "out" (for
// dense / dense_gelu parts: their [T, I] output), and with a backward "dx" and "d<param>" for every
// parameter. Dropout is taken as off: validate the GPU layer with dropout 0.
void bert_layer(const BertConfig& c, BertPart part, const Tensors& in, bool backward, Tensors& out);

}  // namespace xfbench::kernels::ref
