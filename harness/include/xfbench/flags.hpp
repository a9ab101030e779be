// `--xfbench_<name>=value` flags. The host collects them before plugins load; a plugin reads its
// own while registering (declaring it and its help text), so flags can shape which cases exist.
// Flags nobody declared are rejected by the host.
#pragma once

#include <string>
#include <vector>

namespace xfbench {

// Each reader throws InvalidArgument when the value does not parse.
std::string flag_string(const std::string& name, const std::string& fallback,
                        const std::string& help);
bool flag_bool(const std::string& name, bool fallback, const std::string& help);
long flag_int(const std::string& name, long fallback, const std::string& help);
double flag_double(const std::string& name, double fallback, const std::string& help);
std::vector<std::string> flag_list(const std::string& name,
                                   const std::string& help);  // repeated or comma-separated

// Common flags of the SDK.
bool validation_enabled();  // --xfbench_validate (default true)
bool l2_flush_enabled();    // cold mode: --xfbench_mode=cold or --xfbench_l2_flush
bool telemetry_enabled();   // --xfbench_telemetry (default true): NVML sampling while timing

// Splits "a,b,c" (empty items dropped).
std::vector<std::string> split(const std::string& s, char sep);

namespace detail {
struct FlagHelp {
  std::string name, help, fallback;
};
void set_flag(const std::string& name, const std::string& value);  // host: parsed from argv
std::vector<std::string> unknown_flags();                          // given but never declared
std::vector<FlagHelp> declared_flags();
void clear_flags();
}  // namespace detail

}  // namespace xfbench
