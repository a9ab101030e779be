// What the transformer-block tests share: rows of a [batch · seq, width] activation by position
// (the causal tests change later positions and compare earlier ones).
#pragma once

#include <cstddef>
#include <vector>

#include "kernels/models/transformer_block.hpp"

namespace xftest {

// Rows [from, to) of every sequence of a [batch · seq, hidden] tensor, flattened.
inline std::vector<double> rows(const std::vector<double>& t,
                                const xfbench::kernels::BlockConfig& c, int from, int to) {
  std::vector<double> out;
  for (int b = 0; b < c.batch; ++b)
    out.insert(out.end(), t.begin() + (std::size_t(b) * c.seq + from) * c.hidden,
               t.begin() + (std::size_t(b) * c.seq + to) * c.hidden);
  return out;
}

}  // namespace xftest
