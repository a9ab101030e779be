#include "benchmark_flags.hpp"

#include <algorithm>
#include <cctype>
#include <functional>

#include "xfbench/flags.hpp"

namespace xfbench::host {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool is_bool(const std::string& v) {
  static const char* words[] = {"true", "false", "yes", "no", "on", "off",
                                "1",    "0",     "t",   "f",  "y",  "n"};
  return std::any_of(std::begin(words), std::end(words),
                     [&](const char* w) { return lower(v) == w; });
}

// One flag: its name (after "--") and what is wrong with a value ("" when fine). `given` is false
// for a bare `--name` without "=".
struct Rule {
  const char* name;
  std::function<std::string(const std::string& value, bool given)> problem;
};

Rule boolean(const char* name) {
  return {name, [](const std::string& v, bool given) {
            return !given || is_bool(v) ? "" : "expected true or false";
          }};
}

Rule choice(const char* name, std::vector<std::string> allowed, const char* expected) {
  return {name, [allowed, expected](const std::string& v, bool) {
            return std::find(allowed.begin(), allowed.end(), v) != allowed.end()
                       ? std::string()
                       : std::string("expected ") + expected;
          }};
}

const std::vector<Rule>& rules() {
  static const std::vector<Rule> r = {
      boolean("benchmark_list_tests"),
      boolean("benchmark_enable_random_interleaving"),
      boolean("benchmark_report_aggregates_only"),
      boolean("benchmark_display_aggregates_only"),
      boolean("benchmark_counters_tabular"),
      choice("benchmark_format", {"console", "json", "csv"}, "console, json or csv"),
      choice("benchmark_out_format", {"console", "json", "csv"}, "console, json or csv"),
      choice("benchmark_time_unit", {"ns", "us", "ms", "s"}, "ns, us, ms or s"),
      choice("benchmark_color", {"auto", "true", "false", "yes", "no", "1", "0"},
             "auto, true or false"),
      {"benchmark_filter",
       [](const std::string& v, bool) {
         return v.size() <= kMaxFilterLength
                    ? std::string()
                    : std::to_string(v.size()) + " characters; at most " +
                          std::to_string(kMaxFilterLength) +
                          " (a regex that long can overflow std::regex's stack)";
       }},
      {"benchmark_out",
       [](const std::string& v, bool given) {
         return given && !v.empty() ? "" : "expected a file name";
       }},
      {"benchmark_repetitions",
       [](const std::string& v, bool) {
         long x = 0;
         return detail::parse_long(v, x) && x >= 1 && x <= kMaxRepetitions
                    ? std::string()
                    : "expected an integer from 1 to " + std::to_string(kMaxRepetitions);
       }},
      {"benchmark_min_time",
       [](const std::string& v, bool) {
         double x = 0;
         return detail::parse_double(v, x) && x > 0 && x <= 1e6 ? ""
                                                                : "expected seconds, more than 0";
       }},
      {"benchmark_min_warmup_time",
       [](const std::string& v, bool) {
         double x = 0;
         return detail::parse_double(v, x) && x >= 0 && x <= 1e6 ? ""
                                                                 : "expected seconds, 0 or more";
       }},
      {"v",
       [](const std::string& v, bool) {
         long x = 0;
         return detail::parse_long(v, x) && x >= 0 && x <= 100
                    ? ""
                    : "expected a verbosity from 0 to 100";
       }},
  };
  return r;
}

}  // namespace

std::string benchmark_flag_problem(const std::vector<std::string>& args) {
  for (const std::string& a : args) {
    if (a.rfind("--", 0) != 0) continue;
    const std::size_t eq = a.find('=');
    const std::string name = a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    const bool given = eq != std::string::npos;
    const std::string value = given ? a.substr(eq + 1) : "";
    for (const Rule& r : rules()) {
      if (name != r.name) continue;
      if (std::string why = r.problem(value, given); !why.empty()) {
        // A long value is shown by its start only: the line must stay one readable line.
        const std::string shown = value.size() > 60 ? value.substr(0, 40) + "..." : value;
        return "--" + name + (given ? "='" + shown + "'" : "") + ": " + why;
      }
    }
  }
  return "";
}

}  // namespace xfbench::host
