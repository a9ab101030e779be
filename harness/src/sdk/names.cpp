#include "xfbench/names.hpp"

#include <algorithm>
#include <exception>

#include "xfbench/error.hpp"

namespace xfbench {
namespace {

void check_segment(const std::string& name, const std::string& key, const std::string& value) {
  const std::string where =
      "case name '" + name + "': segment '" + (key.empty() ? value : key + ":" + value) + "' ";
  if (value.empty()) XF_THROW(InvalidArgument, where + "has no value");
  if (value.find('/') != std::string::npos) XF_THROW(InvalidArgument, where + "holds a '/'");
  if (key.empty() && value.find(':') != std::string::npos)
    XF_THROW(InvalidArgument, where + "is bare but holds a ':'");
  if (key.find_first_of("/:") != std::string::npos)
    XF_THROW(InvalidArgument, where + "has a key holding '/' or ':'");
}

}  // namespace

CaseName::CaseName(const std::string& family) : name_(family) { check_segment(family, "", family); }

CaseName& CaseName::add(const std::string& value) {
  check_segment(name_, "", value);
  name_ += "/" + value;
  return *this;
}

CaseName& CaseName::add(const std::string& key, const std::string& value) {
  if (key.empty())
    XF_THROW(InvalidArgument, "case name '" + name_ + "': a keyed segment needs a key");
  check_segment(name_, key, value);
  name_ += "/" + key + ":" + value;
  return *this;
}

CaseName& CaseName::add(const std::string& key, long long value) {
  return add(key, std::to_string(value));
}

CaseName& CaseName::add_segments(const std::string& segments) {
  if (segments.empty()) return *this;
  if (segments.front() != '/')
    XF_THROW(InvalidArgument,
             "case name '" + name_ + "': segments '" + segments + "' do not start with '/'");
  std::size_t at = 1;
  while (at <= segments.size()) {
    const std::size_t end = std::min(segments.find('/', at), segments.size());
    const std::string s = segments.substr(at, end - at);
    const std::size_t colon = s.find(':');
    if (colon == std::string::npos)
      add(s);
    else
      add(s.substr(0, colon), s.substr(colon + 1));
    at = end + 1;
  }
  return *this;
}

const std::string& AxisPoint::operator[](const std::string& key) const {
  for (const auto& [k, v] : values_)
    if (k == key) return v;
  XF_THROW(InvalidArgument, "no axis '" + key + "' in this cross product");
}

int AxisPoint::integer(const std::string& key) const {
  const std::string& v = (*this)[key];
  std::size_t used = 0;
  int n = 0;
  try {
    n = std::stoi(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != v.size() || v.empty())
    XF_THROW(InvalidArgument, "axis '" + key + "': '" + v + "' is not a whole number");
  return n;
}

Axes& Axes::add(const std::string& key, const std::vector<std::string>& values) {
  for (const auto& a : axes_)
    if (a.first == key) XF_THROW(InvalidArgument, "axis '" + key + "' declared twice");
  axes_.emplace_back(key, values);
  return *this;
}

Axes& Axes::add(const std::string& key, const std::vector<int>& values) {
  std::vector<std::string> text;
  for (int v : values) text.push_back(std::to_string(v));
  return add(key, text);
}

std::size_t Axes::size() const {
  std::size_t n = 1;
  for (const auto& a : axes_) n *= a.second.size();
  return n;
}

void Axes::for_each(const std::function<void(const AxisPoint&)>& visit) const {
  if (size() == 0) return;
  std::vector<std::size_t> at(axes_.size(), 0);
  AxisPoint p;
  for (const auto& a : axes_) p.values_.emplace_back(a.first, a.second.front());
  while (true) {
    for (std::size_t i = 0; i < axes_.size(); ++i) p.values_[i].second = axes_[i].second[at[i]];
    visit(p);
    std::size_t i = axes_.size();  // the last axis changes fastest
    while (i > 0 && ++at[i - 1] == axes_[i - 1].second.size()) at[--i] = 0;
    if (i == 0) return;
  }
}

}  // namespace xfbench
