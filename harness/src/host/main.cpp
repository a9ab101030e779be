// xfbench: loads the plugins, lets Google Benchmark run their cases, and says by its exit code what
// happened (xfbench/exit_codes.hpp).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "benchmark_flags.hpp"
#include "inventory.hpp"
#include "launcher.hpp"
#include "plugin_loader.hpp"
#include "reporters.hpp"
#include "result_file.hpp"
#include "xfbench/detail/host.hpp"
#include "xfbench/device.hpp"
#include "xfbench/error.hpp"
#include "xfbench/exit_codes.hpp"
#include "xfbench/flags.hpp"
#include "xfbench/plugin.hpp"
#include "xfbench/timer.hpp"

namespace fs = std::filesystem;
using namespace xfbench;
using namespace xfbench::host;

namespace {

constexpr const char* kPrefix = "--xfbench_";

// xfbench's flags grouped by who declared them: the host and SDK first, then each plugin.
void print_xfbench_help() {
  std::map<std::string, std::vector<detail::FlagHelp>> groups;
  for (const detail::FlagHelp& f : detail::declared_flags()) groups[f.group].push_back(f);
  auto print_group = [](const std::string& title, const std::vector<detail::FlagHelp>& flags) {
    std::printf("\n%s:\n", title.c_str());
    for (const detail::FlagHelp& f : flags) {
      std::printf("  --xfbench_%s=%s\n      %s\n", f.name.c_str(),
                  f.fallback.empty() ? "<value>" : f.fallback.c_str(), f.help.c_str());
    }
  };
  print_group("xfbench flags (host, timing protocol, validation)", groups["xfbench"]);
  if (!groups["shared"].empty()) print_group("Flags several plugins read", groups["shared"]);
  for (const auto& [group, flags] : groups) {
    if (group != "xfbench" && group != "shared") print_group("Plugin " + group, flags);
  }
  std::printf(
      "\nEnvironment: XFBENCH_PLUGIN_PATH=dir1:dir2 adds plugin folders.\n"
      "Exit codes: 0 all ran, 1 a case failed, 2 invalid arguments, 3 plugin load error, 4 no "
      "GPU, 5 a Burn case found a faulty GPU or CPU socket, 6 an MPI rank failed, 7 the "
      "--benchmark_out file "
      "could not be written; killed by signal N: 128+N (the JSON is closed first).\n");
}

void print_help() {
  benchmark::PrintDefaultHelp();
  print_xfbench_help();
}

void print_version() {
  const std::uint32_t v = kBenchmarkVersion;
  std::printf("xfbench %s (plugin SDK ABI %u, Google Benchmark %u.%u.%u)\n",
              detail::xfbench_version(), unsigned(kSdkAbiVersion), v / 10000, v / 100 % 100,
              v % 100);
}

// Moves --xfbench_* arguments out of argv into the SDK's flag store.
void take_xfbench_flags(int& argc, char** argv) {
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], kPrefix, std::strlen(kPrefix)) == 0) {
      std::string body = argv[i] + std::strlen(kPrefix);
      std::size_t eq = body.find('=');
      detail::set_flag(body.substr(0, eq), eq == std::string::npos ? "" : body.substr(eq + 1));
    } else {
      argv[out++] = argv[i];
    }
  }
  argc = out;
}

// The value of `--name=value` in argv (the last one), or `fallback`.
std::string arg_value(int argc, char** argv, const std::string& name, const std::string& fallback) {
  std::string value = fallback;
  const std::string prefix = name + "=";
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], prefix.c_str(), prefix.size()) == 0) value = argv[i] + prefix.size();
  }
  return value;
}

bool has_flag(int argc, char** argv, const char* name) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == name || a == std::string(name) + "=true" || a == std::string(name) + "=1") return true;
  }
  return false;
}

// Google Benchmark's filter semantics: "all" or "" is everything, a leading '-' negates.
bool selected(const std::string& name, std::string filter) {
  bool negate = !filter.empty() && filter[0] == '-';
  if (negate) filter = filter.substr(1);
  if (filter.empty() || filter == "all") filter = ".";
  bool match = std::regex_search(name, std::regex(filter, std::regex::extended));
  return match != negate;
}

// Under mpirun/srun every rank runs the host: ranks other than 0 write their JSON to
// <file>.rank<N> so they do not overwrite rank 0's.
std::string rank_output(const std::string& path) {
  const char* rank = host::launcher_rank();
  if (path.empty() || !rank || std::string(rank) == "0") return path;
  return path + ".rank" + rank;
}

// Removes every `--name=...` from argv (the host handles it instead of Google Benchmark).
void drop_arg(int& argc, char** argv, const std::string& name) {
  const std::string prefix = name + "=";
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], prefix.c_str(), prefix.size()) != 0) argv[out++] = argv[i];
  }
  argc = out;
}

// --xfbench_devices: the inventory, or without a GPU the one line GPU cases get, and exit 4.
int print_inventory(int status) {
  if (!gpu_unavailable_reason().empty()) {
    std::fprintf(stderr, "xfbench: --xfbench_devices needs a GPU, but %s.\n",
                 gpu_unavailable_reason().c_str());
    return kNoGpu;
  }
  std::fputs(host::format_inventory(host::collect_inventory()).c_str(), stdout);
  return status;
}

std::string executable_dir(const char* argv0) {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) self = fs::absolute(argv0);
  return self.parent_path().string();
}

int run(int argc, char** argv) {
  take_xfbench_flags(argc, argv);
  const bool want_help = has_flag(argc, argv, "--help") || has_flag(argc, argv, "-h");
  if (has_flag(argc, argv, "--version")) {
    print_version();
    return kAllRan;
  }
  if (std::string why = benchmark_flag_problem({argv + 1, argv + argc}); !why.empty()) {
    XF_THROW(InvalidArgument, why);
  }
  const bool listing = has_flag(argc, argv, "--benchmark_list_tests");

  // Host flags (reading them declares them for --help and the unknown-flag check).
  std::vector<std::string> dirs =
      flag_list("plugin_dir", "load plugins from this folder too (repeatable)");
  const bool list_plugins = flag_bool("list_plugins", false, "list loaded plugins and exit");
  const bool devices =
      flag_bool("devices", false,
                "print the GPUs (name, UUID, clocks, memory, PCIe, power limit, "
                "ECC) and how they are joined (NVLinks, PCIe path, P2P), then exit");
  const bool allow_plugin_errors =
      flag_bool("allow_plugin_errors", false, "exit 0 even when a plugin failed to load");
  // The range keeps the index an int: 4294967296 would otherwise become device 0.
  const long device = flag_int("device", 0,
                               "index of the CUDA device to run on (under mpirun or srun: "
                               "default the rank's index on its node, modulo the GPUs)",
                               {0, std::numeric_limits<int>::max(), ""});
  const std::string suite =
      flag_string("suite", "default",
                  "default (the core cases when no --benchmark_filter is given) or all (every "
                  "case but the on-request ones such as Burn)");
  if (suite != "default" && suite != "all") {
    XF_THROW(InvalidArgument, "--xfbench_suite='" + suite + "': expected default or all");
  }
  validation_enabled();
  telemetry_enabled();
  timing_mode();
  steady_state_options();
  window_seconds();
  detail::gpu_iterations();
  // Google Benchmark's flags the host needs, read before Initialize() consumes them. The host
  // writes the --benchmark_out file itself (result_file.hpp): checked now, before any work.
  const std::string filter = arg_value(argc, argv, "--benchmark_filter", "");
  const std::string out_path = rank_output(arg_value(argc, argv, "--benchmark_out", ""));
  const std::string out_format = arg_value(argc, argv, "--benchmark_out_format", "json");
  drop_arg(argc, argv, "--benchmark_out");
  drop_arg(argc, argv, "--benchmark_out_format");
  if (!out_path.empty() && !want_help && !listing) {
    if (std::string why = output_problem(out_path); !why.empty()) {
      XF_THROW(InvalidArgument, "--benchmark_out=" + out_path + ": " + why);
    }
  }
  detail::set_case_selection({!filter.empty() && filter != "all", filter, suite == "all"});

  PluginLoader loader;
  for (const std::string& d : default_plugin_dirs(executable_dir(argv[0])))
    loader.load_directory(d, false);
  for (const std::string& d : dirs) loader.load_directory(d, true);
  if (const char* env = std::getenv("XFBENCH_PLUGIN_PATH")) {
    for (const std::string& d : split(env, ':')) loader.load_directory(d, true);
  }

  if (want_help) {
    print_help();
    return kAllRan;
  }
  benchmark::Initialize(&argc, argv);
  if (argc > 1) {  // what neither xfbench nor Google Benchmark took
    XF_THROW(InvalidArgument, std::string("unknown argument '") + argv[1] + "' (see --help)");
  }

  for (const PluginError& e : loader.errors()) {
    std::fprintf(stderr, "xfbench: plugin %s: %s\n", e.path.c_str(), e.reason.c_str());
  }
  if (!loader.argument_errors().empty()) {
    std::set<std::string> said;  // a flag several plugins read (--xfbench_gpus) is said once
    for (const PluginError& e : loader.argument_errors()) {
      if (said.insert(e.reason).second) {
        std::fprintf(stderr, "xfbench: invalid argument: %s\n", e.reason.c_str());
      }
    }
    return kInvalidArgs;
  }
  if (auto unknown = detail::unknown_flags(); !unknown.empty()) {
    for (const std::string& f : unknown) {
      std::fprintf(stderr, "xfbench: unknown flag --xfbench_%s (see --help)\n", f.c_str());
    }
    return kInvalidArgs;
  }
  const int plugin_status =
      loader.errors().empty() || allow_plugin_errors ? kAllRan : kPluginErrors;

  if (devices) return print_inventory(plugin_status);
  if (list_plugins) {
    std::printf("%-14s %-9s %6s  %s\n", "plugin", "version", "cases", "path");
    for (const LoadedPlugin& p : loader.plugins()) {
      std::printf("%-14s %-9s %6zu  %s\n    %s\n", p.name.c_str(), p.version.c_str(), p.cases,
                  p.path.c_str(), p.description.c_str());
    }
    return plugin_status;
  }

  // What the filter selects among the cases handed to Google Benchmark (the suite's).
  std::size_t gpu_cases = 0, cpu_cases = 0;
  std::string cpu_example;  // a CPU case a filter could select instead, for the no-GPU hint
  for (const detail::CaseRecord& c : detail::registered_cases()) {
    if (c.needs == Needs::cpu && cpu_example.empty()) cpu_example = c.name;
    if (c.registered && selected(detail::run_name(c), benchmark::GetBenchmarkFilter())) {
      ++(c.needs == Needs::gpu ? gpu_cases : cpu_cases);
    }
  }
  if (gpu_cases + cpu_cases == 0) {  // a typo must not look like a pass
    XF_THROW(InvalidArgument, filter.empty() ? std::string("no plugin registered any case")
                                             : "--benchmark_filter='" + filter.substr(0, 60) +
                                                   (filter.size() > 60 ? "..." : "") +
                                                   "' matches no case (--benchmark_list_tests "
                                                   "--xfbench_suite=all lists them)");
  }

  bool gpu_missing = false;
  if (!listing) {
    const std::string hint = cpu_cases ? " Running the CPU cases only."
                             : cpu_example.empty()
                                 ? " Run on a machine with a CUDA GPU."
                                 : " Select CPU cases with --benchmark_filter (e.g. '" +
                                       cpu_example + "'), or run on a machine with a CUDA GPU.";
    if (gpu_cases > 0 && !gpu_unavailable_reason().empty()) {
      // One line; CPU cases still run (GPU cases then say why they were skipped), exit code 4.
      gpu_missing = true;
      std::fprintf(stderr, "xfbench: %zu selected case%s need%s a GPU, but %s.%s\n", gpu_cases,
                   gpu_cases == 1 ? "" : "s", gpu_cases == 1 ? "s" : "",
                   gpu_unavailable_reason().c_str(), hint.c_str());
      if (cpu_cases == 0) return kNoGpu;
    } else if (gpu_cases > 0) {
      // throws InvalidArgument naming the device count
      select_device(host::default_device(!arg_value(argc, argv, "--xfbench_device", "").empty(),
                                         device, host::launcher_local_rank(), device_count()));
    }
    std::vector<std::string> versions;
    for (const LoadedPlugin& p : loader.plugins()) versions.push_back(p.name + " " + p.version);
    detail::add_run_context(versions);
  }

  std::size_t held_back = 0;
  std::vector<std::string> families;  // one entry per selected case, for the progress estimate
  for (const detail::CaseRecord& c : detail::registered_cases()) {
    if (!c.registered) {
      held_back += c.suite == Suite::extended;
    } else if (selected(detail::run_name(c), benchmark::GetBenchmarkFilter())) {
      families.push_back(detail::family_of(c.name));
    }
  }
  if (held_back > 0) {
    std::fprintf(stderr,
                 "xfbench: default suite, %zu cases; %zu more (sweeps of sizes, batches, dtypes) "
                 "when --benchmark_filter selects them, or with --xfbench_suite=all\n",
                 families.size(), held_back);
  }
  Progress progress(families);
  std::unique_ptr<ResultFile> file;
  if (!out_path.empty() && !listing)
    file = std::make_unique<ResultFile>(out_path, out_format == "json");
  HostReporter reporter(
      std::unique_ptr<benchmark::BenchmarkReporter>(benchmark::CreateDefaultDisplayReporter()),
      listing ? nullptr : &progress, file ? file_reporter_for(out_format) : nullptr, file.get());
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();  // plugins stay loaded (loader outlives this) until the process ends
  const std::string write_error = file ? file->close() : "";

  std::size_t left_out = 0;
  std::string reasons;
  for (const auto& [reason, n] : detail::left_out_counts()) {
    left_out += n;
    reasons += (reasons.empty() ? "" : "; ") + std::to_string(n) + " " + reason;
  }
  if (left_out > 0) {
    std::fprintf(stderr,
                 "xfbench: left out %zu case%s this machine cannot run (%s); "
                 "--benchmark_list_tests lists them\n",
                 left_out, left_out == 1 ? "" : "s", reasons.c_str());
  }

  if (!write_error.empty()) return kOutputLost;  // said when the write failed
  if (detail::faulty_device_reported()) return kFaultyGpu;
  if (detail::failed_case_count() > 0 || detail::device_not_run_reported()) return kCasesFailed;
  if (gpu_missing) return kNoGpu;
  return plugin_status;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const InvalidArgument& e) {
    std::fprintf(stderr, "xfbench: invalid argument: %s\n", e.message().c_str());
    return kInvalidArgs;
  } catch (const std::regex_error& e) {
    std::fprintf(stderr, "xfbench: invalid --benchmark_filter: %s\n", e.what());
    return kInvalidArgs;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "xfbench: %s\n", e.what());
    return kCasesFailed;
  }
}
