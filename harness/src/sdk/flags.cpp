#include "xfbench/flags.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>

#include "xfbench/detail/host.hpp"
#include "xfbench/error.hpp"

namespace xfbench {
namespace {

struct Store {
  std::mutex mu;
  std::map<std::string, std::vector<std::string>> given;  // name -> values (repeatable)
  std::map<std::string, detail::FlagHelp> declared;
};
Store& store() {
  static Store s;
  return s;
}

// The last value given for `name`, or nullptr; declares the flag.
const std::string* lookup(const std::string& name, const std::string& fallback,
                          const std::string& help) {
  Store& s = store();
  std::lock_guard<std::mutex> lock(s.mu);
  const std::string& by = detail::registering_plugin();
  auto [it_declared, fresh] = s.declared.emplace(name, detail::FlagHelp{name, help, fallback, by});
  if (!fresh && it_declared->second.group != by) it_declared->second.group = "shared";
  auto it = s.given.find(name);
  return it == s.given.end() || it->second.empty() ? nullptr : &it->second.back();
}

[[noreturn]] void bad_value(const std::string& name, const std::string& value,
                            const char* expected) {
  XF_THROW(InvalidArgument, "--xfbench_" + name + "='" + value + "': expected " + expected);
}

std::string expected_in(const IntRange& r) {
  return "an integer " + (r.unit.empty() ? std::string() : r.unit + " ") + "from " +
         std::to_string(r.lo) + " to " + std::to_string(r.hi);
}

}  // namespace

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

std::string flag_string(const std::string& name, const std::string& fallback,
                        const std::string& help) {
  const std::string* v = lookup(name, fallback, help);
  return v ? *v : fallback;
}

bool flag_bool(const std::string& name, bool fallback, const std::string& help) {
  const std::string* v = lookup(name, fallback ? "true" : "false", help);
  if (!v) return fallback;
  if (*v == "" || *v == "true" || *v == "1" || *v == "yes") return true;
  if (*v == "false" || *v == "0" || *v == "no") return false;
  bad_value(name, *v, "true or false");
}

long flag_int(const std::string& name, long fallback, const std::string& help) {
  const std::string* v = lookup(name, std::to_string(fallback), help);
  if (!v) return fallback;
  long x = 0;
  if (!detail::parse_long(*v, x)) bad_value(name, *v, "an integer");
  return x;
}

long flag_int(const std::string& name, long fallback, const std::string& help,
              const IntRange& range) {
  const long x = flag_int(name, fallback, help);
  if (x < range.lo || x > range.hi) {
    bad_value(name, flag_string(name, "", help), expected_in(range).c_str());
  }
  return x;
}

std::vector<long> flag_int_list(const std::string& name, const std::string& help,
                                std::vector<long> fallback, const IntRange& range) {
  std::vector<std::string> given = flag_list(name, help);
  if (given.empty()) return fallback;
  std::vector<long> out;
  std::set<long> seen;
  for (const std::string& g : given) {
    long x = 0;
    if (!detail::parse_long(g, x) || x < range.lo || x > range.hi) {
      XF_THROW(InvalidArgument,
               "--xfbench_" + name + ": '" + g + "': expected " + expected_in(range));
    }
    if (!seen.insert(x).second) {
      XF_THROW(InvalidArgument, "--xfbench_" + name + ": " + std::to_string(x) +
                                    " is given twice (each value makes its own cases)");
    }
    out.push_back(x);
  }
  return out;
}

std::vector<std::string> flag_choice_list(const std::string& name, const std::string& help,
                                          std::vector<std::string> fallback,
                                          const std::vector<std::string>& allowed) {
  std::vector<std::string> given = flag_list(name, help);
  if (given.empty()) return fallback;
  for (const std::string& g : given) {
    if (std::find(allowed.begin(), allowed.end(), g) == allowed.end()) {
      std::string names;
      for (const std::string& a : allowed) names += (names.empty() ? "" : ", ") + a;
      XF_THROW(InvalidArgument,
               "--xfbench_" + name + ": unknown value '" + g + "' (expected " + names + ")");
    }
  }
  return given;
}

double flag_double(const std::string& name, double fallback, const std::string& help) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", fallback);
  const std::string* v = lookup(name, text, help);
  if (!v) return fallback;
  double x = 0;
  if (!detail::parse_double(*v, x)) bad_value(name, *v, "a number");
  return x;
}

std::vector<std::string> flag_list(const std::string& name, const std::string& help) {
  lookup(name, "", help);
  Store& s = store();
  std::lock_guard<std::mutex> lock(s.mu);
  std::vector<std::string> out;
  auto it = s.given.find(name);
  if (it == s.given.end()) return out;
  std::set<std::string> seen;
  for (const std::string& v : it->second) {
    for (std::string& item : split(v, ',')) {
      if (out.size() == kMaxListItems) {
        XF_THROW(InvalidArgument,
                 "--xfbench_" + name + ": more than " + std::to_string(kMaxListItems) + " values");
      }
      if (!seen.insert(item).second) {
        XF_THROW(InvalidArgument, "--xfbench_" + name + ": '" + item +
                                      "' is given twice (each value makes its own cases)");
      }
      out.push_back(std::move(item));
    }
  }
  return out;
}

bool validation_enabled() {
  static const bool on = flag_bool("validate", true, "check every case's result before timing it");
  return on;
}

bool telemetry_enabled() {
  static const bool on = flag_bool("telemetry", true,
                                   "sample clocks, temperature and power with NVML (every 10 ms) "
                                   "while a case is timed");
  return on;
}

namespace detail {
bool parse_long(const std::string& text, long& out) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  out = std::strtol(text.c_str(), &end, 10);
  return *end == '\0' && errno != ERANGE;
}

bool parse_double(const std::string& text, double& out) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  out = std::strtod(text.c_str(), &end);
  return *end == '\0' && errno != ERANGE && std::isfinite(out);
}

void set_flag(const std::string& name, const std::string& value) {
  Store& s = store();
  std::lock_guard<std::mutex> lock(s.mu);
  s.given[name].push_back(value);
}

std::vector<std::string> unknown_flags() {
  Store& s = store();
  std::lock_guard<std::mutex> lock(s.mu);
  std::vector<std::string> out;
  for (const auto& kv : s.given) {
    if (!s.declared.count(kv.first)) out.push_back(kv.first);
  }
  return out;
}

std::vector<FlagHelp> declared_flags() {
  Store& s = store();
  std::lock_guard<std::mutex> lock(s.mu);
  std::vector<FlagHelp> out;
  for (const auto& kv : s.declared) out.push_back(kv.second);
  return out;
}

void clear_flags() {
  Store& s = store();
  std::lock_guard<std::mutex> lock(s.mu);
  s.given.clear();
  s.declared.clear();
}
}  // namespace detail

}  // namespace xfbench
