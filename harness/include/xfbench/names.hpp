// Case names and the axes they come from (Family/variant/.../key:value, DESIGN "Names"): a plugin
// declares the axes it sweeps once (Axes: their cross product, the first axis outermost, as nested
// loops would run) and builds each name segment by segment (CaseName: a bare value, "fused", or a
// keyed one, "seq:512"), so a family's order and keys are written in one place and every segment
// is checked: a value holding '/' would split a segment, a bare one holding ':' would read as a
// key.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace xfbench {

class CaseName {
 public:
  explicit CaseName(const std::string& family);
  CaseName& add(const std::string& value);                          // "/fused"
  CaseName& add(const std::string& key, const std::string& value);  // "/seq:512"
  CaseName& add(const std::string& key, long long value);
  // Segments already written as "/key:value/..." (a model's size tag, the parallel variants);
  // each is checked as add's are. Empty: nothing.
  CaseName& add_segments(const std::string& segments);
  const std::string& str() const { return name_; }

 private:
  std::string name_;
};

// One point of an Axes' cross product: each axis' value by key.
class AxisPoint {
 public:
  const std::string& operator[](const std::string& key) const;  // InvalidArgument: no such axis
  int integer(const std::string& key) const;                    // InvalidArgument: not a number

 private:
  friend class Axes;
  std::vector<std::pair<std::string, std::string>> values_;
};

class Axes {
 public:
  // A key once (InvalidArgument otherwise); an axis without values makes the product empty.
  Axes& add(const std::string& key, const std::vector<std::string>& values);
  Axes& add(const std::string& key, const std::vector<int>& values);
  std::size_t size() const;  // the points of the cross product
  // Every point, the first axis outermost and the last changing fastest.
  void for_each(const std::function<void(const AxisPoint&)>& visit) const;

 private:
  std::vector<std::pair<std::string, std::vector<std::string>>> axes_;
};

}  // namespace xfbench
