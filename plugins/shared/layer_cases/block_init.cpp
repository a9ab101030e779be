#include "block_init.hpp"

#include <cmath>

#include "xfbench/xfbench.hpp"

namespace xfbench::block {

void init_block(kernels::TransformerBlock& block, std::uint64_t seed, cudaStream_t stream) {
  const kernels::BlockConfig& c = block.config();
  const Dtype t = storage_dtype(c.precision);
  auto fill = [&](const std::string& name, double lo, double hi) {
    if (void* p = block.tensor(name))
      fill_uniform(p, block.elements(name), t, seed++, lo, hi, stream);
  };
  for (const std::string& p : block.parameters()) {
    if (p.rfind("ln", 0) == 0) {
      p.back() == 'w' ? fill(p, 0.9, 1.1) : fill(p, -0.1, 0.1);
    } else if (p[0] == 'b') {
      fill(p, -0.1, 0.1);
    } else if (p == "rel_bias") {  // T5's position bias: large enough to move the softmax
      fill(p, -1.0, 1.0);
    } else {
      const bool output = p == "wo" || p == "wo_cross";  // reads the attention width
      const double fan_in = p == "wout" ? c.intermediate : output ? c.attention_width() : c.hidden;
      const double bound = 1.0 / std::sqrt(fan_in);
      fill(p, -bound, bound);
    }
  }
  fill("x", -1.0, 1.0);
  fill("enc", -1.0, 1.0);  // T5's decoder: the encoder states
  fill("dout", -1.0, 1.0);
}

}  // namespace xfbench::block
