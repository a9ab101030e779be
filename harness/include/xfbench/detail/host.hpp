// What the host needs from the SDK beyond the plugin API. Not for plugins.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "xfbench/case.hpp"

namespace xfbench::detail {

struct CaseRecord {
  std::string name;    // as registered (without Google Benchmark's /manual_time)
  std::string plugin;  // which plugin registered it
  Needs needs = Needs::gpu;
  Suite suite = Suite::core;
  bool registered = false;  // handed to Google Benchmark (selected by suite and filter)
};

// Which suites reach Google Benchmark, set by the host before plugins load: the core suite
// always; extended cases when a filter was given or --xfbench_suite=all; on-request cases when
// the filter's text names their family.
struct CaseSelection {
  bool filter_given = false;
  std::string filter;
  bool all = false;
};
void set_case_selection(const CaseSelection& s);
std::string family_of(const std::string& case_name);  // "BertLayer" of "BertLayer/fused/..."

// Cases a run left out ("left out: <reason>"), counted per reason.
std::vector<std::pair<std::string, std::size_t>> left_out_counts();
constexpr const char* kLeftOutPrefix = "left out: ";
void reset_label();  // the label add_label builds, cleared per case

// The plugin whose registration function runs now (cases and flags are attributed to it);
// "xfbench" outside registration.
void set_registering_plugin(const std::string& name);
const std::string& registering_plugin();

// "1.4.0": the xfbench release this SDK belongs to.
const char* xfbench_version();
const std::vector<CaseRecord>& registered_cases();
// Cases added by the current registration function: committed to Google Benchmark, or dropped.
std::size_t commit_pending_cases();  // returns how many
void discard_pending_cases();

// Case outcomes, for the exit code.
std::size_t failed_case_count();  // errors other than "unsupported here"
bool faulty_device_reported();       // report_faulty_device() was called (exit_codes.hpp)
bool device_not_run_reported();      // report_device_not_run() was called
bool cuda_context_broken();

// Google Benchmark's name of a registered case (GPU cases get "/manual_time").
std::string run_name(const CaseRecord& c);

// Fills Google Benchmark's JSON context (device, driver, libraries, peaks, plugins).
void add_run_context(const std::vector<std::string>& plugin_versions);

// Timed iterations of GPU cases in hot and cold modes (--xfbench_iterations).
int gpu_iterations();

}  // namespace xfbench::detail
