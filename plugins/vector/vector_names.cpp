// Names and byte counts of the Vector ops (host side, unit-tested).
#include <string>

#include "vector_kernels.hpp"
#include "xfbench/error.hpp"

namespace xfbench::vector {

const char* to_string(Op op) {
  switch (op) {
    case Op::scale:
      return "scale";
    case Op::copy:
      return "copy";
    case Op::triad:
      return "triad";
    case Op::read:
      return "read";
    case Op::write:
      return "write";
  }
  return "?";
}

Op parse_op(const char* name) {
  for (Op op : {Op::scale, Op::copy, Op::triad, Op::read, Op::write}) {
    if (std::string(name) == to_string(op)) return op;
  }
  XF_THROW(InvalidArgument, std::string("--xfbench_vector_ops: unknown op '") + name +
                                "' (expected scale, copy, triad, read or write)");
}

double bytes_moved(Op op, std::size_t n, Dtype t) {
  double elems = double(n) * double(size_of(t));
  switch (op) {
    case Op::scale:
    case Op::copy:
      return 2 * elems;
    case Op::triad:
      return 3 * elems;
    case Op::read:
    case Op::write:
      return elems;
  }
  return 0;
}

}  // namespace xfbench::vector
