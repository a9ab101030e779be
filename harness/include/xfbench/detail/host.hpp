// What the host needs from the SDK beyond the plugin API. Not for plugins.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "xfbench/case.hpp"

namespace xfbench::detail {

struct CaseRecord {
  std::string name;    // as registered (without Google Benchmark's /manual_time)
  std::string plugin;  // which plugin registered it
  Needs needs = Needs::gpu;
};

// The plugin whose registration function runs now (cases are attributed to it).
void set_registering_plugin(const std::string& name);
const std::vector<CaseRecord>& registered_cases();
// Cases added by the current registration function: committed to Google Benchmark, or dropped.
std::size_t commit_pending_cases();  // returns how many
void discard_pending_cases();

// Case outcomes, for the exit code.
std::size_t failed_case_count();  // errors other than "unsupported here"
bool cuda_context_broken();

// Google Benchmark's name of a registered case (GPU cases get "/manual_time").
std::string run_name(const CaseRecord& c);

// Fills Google Benchmark's JSON context (device, driver, libraries, peaks, plugins).
void add_run_context(const std::vector<std::string>& plugin_versions);

// Default timed iterations of GPU cases (--xfbench_iterations).
int gpu_iterations();

}  // namespace xfbench::detail
