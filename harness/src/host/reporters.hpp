// The host's reporter: Google Benchmark's own (console, JSON, CSV) behind a decorator that hides
// cases left out because the machine lacks what they need (a second GPU, ATS), prints progress
// with an estimate of the time left, and feeds the --benchmark_out file (result_file.hpp) after
// every case.
#pragma once

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "result_file.hpp"

namespace xfbench::host {

// Estimates the time left from the seconds each finished case took: cases of a family seen so far
// are expected to take that family's mean, others the mean of all finished cases. Pure: tested.
class Progress {
 public:
  explicit Progress(const std::vector<std::string>& families_to_run);  // one entry per case
  void finished(const std::string& family, double seconds);
  std::size_t done() const { return done_; }
  std::size_t total() const { return total_; }
  double seconds_left() const;

 private:
  std::map<std::string, std::size_t> left_;                      // cases still to run, per family
  std::map<std::string, std::pair<double, std::size_t>> spent_;  // seconds and cases per family
  double all_seconds_ = 0;
  std::size_t done_ = 0, total_ = 0;
};

// "1:05" or "1:02:07".
std::string clock_text(double seconds);

class HostReporter : public benchmark::BenchmarkReporter {
 public:
  // `file_format` and `file` are null without --benchmark_out; `progress` is null when listing.
  HostReporter(std::unique_ptr<benchmark::BenchmarkReporter> display, Progress* progress,
               std::unique_ptr<benchmark::BenchmarkReporter> file_format = nullptr,
               ResultFile* file = nullptr);
  bool ReportContext(const Context& context) override;
  void ReportRuns(const std::vector<Run>& runs) override;
  void Finalize() override;

 private:
  void flush_file(bool open);  // what the file reporter wrote since the last call, to the file

  std::unique_ptr<benchmark::BenchmarkReporter> inner_;
  Progress* progress_;
  std::unique_ptr<benchmark::BenchmarkReporter> file_format_;
  ResultFile* file_;
  std::ostringstream file_text_;
  std::size_t cases_done_ = 0;
  std::set<std::string> seen_;  // run names already counted (interleaved repetitions)
  std::chrono::steady_clock::time_point start_, last_case_, last_print_;
};

// Google Benchmark's reporter for --benchmark_out_format (json, console or csv).
std::unique_ptr<benchmark::BenchmarkReporter> file_reporter_for(const std::string& format);

}  // namespace xfbench::host
