// Google Benchmark's own flags, checked before it reads them. Its parser accepts values it later
// rejects by printing its usage and exiting 0 (`--benchmark_format=xml`), reads any word as true
// (`--benchmark_counters_tabular=maybe`), and takes `--benchmark_repetitions=-1` into a
// vector::reserve. Here each bad value becomes one line and exit 2 before any work.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace xfbench::host {

// Longer filters are refused: std::regex compiles and matches by recursion, and a pattern of
// some 20,000 characters overflows the stack (SIGSEGV) before any case runs.
constexpr std::size_t kMaxFilterLength = 4000;
constexpr long kMaxRepetitions = 10000;

// Why one of `args` (argv without the program name) gives a Google Benchmark flag a value it
// cannot take, naming the flag and what it accepts; "" when all are fine. Flags it does not know
// are left to Google Benchmark's own "unrecognized" check.
std::string benchmark_flag_problem(const std::vector<std::string>& args);

}  // namespace xfbench::host
