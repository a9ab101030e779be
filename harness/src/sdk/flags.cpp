#include "xfbench/flags.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>

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
  s.declared.emplace(name, detail::FlagHelp{name, help, fallback});
  auto it = s.given.find(name);
  return it == s.given.end() || it->second.empty() ? nullptr : &it->second.back();
}

[[noreturn]] void bad_value(const std::string& name, const std::string& value,
                            const char* expected) {
  XF_THROW(InvalidArgument, "--xfbench_" + name + "='" + value + "': expected " + expected);
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
  char* end = nullptr;
  long x = std::strtol(v->c_str(), &end, 10);
  if (v->empty() || *end != '\0') bad_value(name, *v, "an integer");
  return x;
}

double flag_double(const std::string& name, double fallback, const std::string& help) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", fallback);
  const std::string* v = lookup(name, text, help);
  if (!v) return fallback;
  char* end = nullptr;
  double x = std::strtod(v->c_str(), &end);
  if (v->empty() || *end != '\0' || !std::isfinite(x)) bad_value(name, *v, "a number");
  return x;
}

std::vector<std::string> flag_list(const std::string& name, const std::string& help) {
  lookup(name, "", help);
  Store& s = store();
  std::lock_guard<std::mutex> lock(s.mu);
  std::vector<std::string> out;
  auto it = s.given.find(name);
  if (it == s.given.end()) return out;
  for (const std::string& v : it->second) {
    for (std::string& item : split(v, ',')) out.push_back(std::move(item));
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
