// `--xfbench_<name>=value` flags. The host collects them before plugins load; a plugin reads its
// own while registering (declaring it and its help text), so flags can shape which cases exist.
// Flags nobody declared are rejected by the host.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace xfbench {

// Each reader throws InvalidArgument when the value does not parse.
std::string flag_string(const std::string& name, const std::string& fallback,
                        const std::string& help);
bool flag_bool(const std::string& name, bool fallback, const std::string& help);
long flag_int(const std::string& name, long fallback, const std::string& help);
double flag_double(const std::string& name, double fallback, const std::string& help);
// Repeated or comma-separated; a value given twice, or more than kMaxListItems, is rejected.
std::vector<std::string> flag_list(const std::string& name, const std::string& help);
constexpr std::size_t kMaxListItems = 1000;

// The range an integer flag accepts, in the flag's own unit ("percent", "MiB"; "" for a count):
// a value outside it is rejected with a message naming the range and the unit.
struct IntRange {
  long lo, hi;
  std::string unit;
};
long flag_int(const std::string& name, long fallback, const std::string& help,
              const IntRange& range);
// A list of integers, each in `range`; `fallback` when the flag is not given.
std::vector<long> flag_int_list(const std::string& name, const std::string& help,
                                std::vector<long> fallback, const IntRange& range);
// A list of values, each one of `allowed`; `fallback` when the flag is not given.
std::vector<std::string> flag_choice_list(const std::string& name, const std::string& help,
                                          std::vector<std::string> fallback,
                                          const std::vector<std::string>& allowed);

// Common flags of the SDK.
bool validation_enabled();  // --xfbench_validate (default true)
bool l2_flush_enabled();    // cold mode: --xfbench_mode=cold or --xfbench_l2_flush
bool telemetry_enabled();   // --xfbench_telemetry (default true): NVML sampling while timing

// Splits "a,b,c" (empty items dropped).
std::vector<std::string> split(const std::string& s, char sep);

namespace detail {
struct FlagHelp {
  std::string name, help, fallback;
  std::string group;  // the plugin that declared it, "xfbench" (host, SDK) or "shared"
};
// Whole decimal texts: "1e9", "12x", "" and out-of-range values are not integers; numbers are
// finite. Shared by the flag readers and the host's check of Google Benchmark's flags.
bool parse_long(const std::string& text, long& out);
bool parse_double(const std::string& text, double& out);
void set_flag(const std::string& name, const std::string& value);  // host: parsed from argv
std::vector<std::string> unknown_flags();                          // given but never declared
std::vector<FlagHelp> declared_flags();
void clear_flags();
}  // namespace detail

}  // namespace xfbench
