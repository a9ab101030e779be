// reports/name_schema.txt read as reports/loader.py reads it: a case name's axes by the first
// shape of its family that it matches (the grammar is in the file's header). Test code: the
// names xfbench lists are checked against the same spec the reports parse them with.
#pragma once

#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace xftest {

struct NameItem {
  std::string axis, literal;  // literal: "axis=v" must be v
  bool keyed = false;
};
using NameGroup = std::pair<std::vector<NameItem>, bool>;  // items, optional
struct NameShape {
  std::string family;
  std::vector<NameGroup> groups;
};

inline NameItem name_item(const std::string& word) {
  NameItem it;
  if (!word.empty() && word.back() == ':') {
    it.axis = word.substr(0, word.size() - 1), it.keyed = true;
  } else if (word.find('=') != std::string::npos) {
    it.axis = word.substr(0, word.find('=')), it.literal = word.substr(word.find('=') + 1);
  } else {
    it.axis = word;
  }
  return it;
}

inline std::vector<NameShape> parse_name_schema(const std::string& text) {
  std::vector<NameShape> shapes;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    NameShape s;
    words >> s.family;
    bool in_group = false;
    for (std::string w; words >> w;) {
      const bool opens = w.front() == '[', closes = w.back() == ']';
      if (opens) w = w.substr(1), s.groups.push_back({{}, true}), in_group = true;
      if (closes) w.pop_back();
      if (!in_group) s.groups.push_back({{}, false});
      s.groups.back().first.push_back(name_item(w));
      if (closes) in_group = false;
    }
    shapes.push_back(s);
  }
  return shapes;
}

namespace detail {
inline bool match_from(const std::vector<NameGroup>& groups, std::size_t g,
                       const std::vector<std::string>& tokens, std::size_t t,
                       std::map<std::string, std::string>& axes) {
  if (g == groups.size()) return t == tokens.size();
  const auto& [items, optional] = groups[g];
  std::map<std::string, std::string> with = axes;
  std::size_t at = t;
  bool fits = at + items.size() <= tokens.size();
  for (std::size_t i = 0; fits && i < items.size(); ++i, ++at) {
    const std::string& tok = tokens[at];
    const std::size_t colon = tok.find(':');
    const NameItem& it = items[i];
    if (it.keyed) {
      fits = colon != std::string::npos && tok.substr(0, colon) == it.axis;
      if (fits) with[it.axis] = tok.substr(colon + 1);
    } else {
      fits = colon == std::string::npos && (it.literal.empty() || tok == it.literal);
      if (fits) with[it.axis] = tok;
    }
  }
  if (fits && match_from(groups, g + 1, tokens, at, with)) {
    axes = with;
    return true;
  }
  return optional && match_from(groups, g + 1, tokens, t, axes);
}
}  // namespace detail

// The axes of `name` by the first shape of its family it matches; nullopt when none does.
inline std::optional<std::map<std::string, std::string>> name_axes(
    const std::vector<NameShape>& shapes, const std::string& name) {
  std::vector<std::string> tokens;
  std::istringstream in(name);
  for (std::string t; std::getline(in, t, '/');) tokens.push_back(t);
  if (tokens.empty()) return std::nullopt;
  const std::string family = tokens.front();
  tokens.erase(tokens.begin());
  for (const NameShape& s : shapes) {
    std::map<std::string, std::string> axes;
    if (s.family == family && detail::match_from(s.groups, 0, tokens, 0, axes)) return axes;
  }
  return std::nullopt;
}

}  // namespace xftest
