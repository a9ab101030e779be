#include "reporters.hpp"

#include <cstdio>
#include <cstring>
#include <ostream>

#include "xfbench/detail/host.hpp"

namespace xfbench::host {
namespace {

using Clock = std::chrono::steady_clock;
constexpr double kPrintEverySeconds = 5;

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

bool left_out(const benchmark::BenchmarkReporter::Run& run) {
  return run.error_occurred &&
         run.error_message.rfind(detail::kLeftOutPrefix, 0) == 0;  // starts with
}

}  // namespace

Progress::Progress(const std::vector<std::string>& families_to_run) {
  for (const std::string& f : families_to_run) ++left_[f];
  total_ = families_to_run.size();
}

void Progress::finished(const std::string& family, double seconds) {
  auto it = left_.find(family);
  if (it != left_.end() && it->second > 0) --it->second;
  auto& [sum, n] = spent_[family];
  sum += seconds;
  ++n;
  all_seconds_ += seconds;
  ++done_;
}

double Progress::seconds_left() const {
  if (done_ == 0) return 0;
  const double overall = all_seconds_ / double(done_);
  double left = 0;
  for (const auto& [family, n] : left_) {
    auto it = spent_.find(family);
    left +=
        double(n) * (it != spent_.end() ? it->second.first / double(it->second.second) : overall);
  }
  return left;
}

std::string clock_text(double seconds) {
  long s = long(seconds + 0.5);
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
  }
  return buf;
}

HostReporter::HostReporter(std::unique_ptr<benchmark::BenchmarkReporter> display,
                           Progress* progress,
                           std::unique_ptr<benchmark::BenchmarkReporter> file_format,
                           ResultFile* file)
    : inner_(std::move(display)),
      progress_(progress),
      file_format_(std::move(file_format)),
      file_(file) {}

void HostReporter::flush_file(bool open) {
  if (!file_) return;
  file_->write(file_text_.str());
  file_text_.str("");
  file_->set_state(open, cases_done_, progress_ ? progress_->total() : 0);
}

bool HostReporter::ReportContext(const Context& context) {
  inner_->SetOutputStream(&GetOutputStream());
  inner_->SetErrorStream(&GetErrorStream());
  start_ = last_case_ = last_print_ = Clock::now();
  if (file_format_) {
    file_format_->SetOutputStream(&file_text_);
    file_format_->SetErrorStream(&file_text_);
    file_format_->ReportContext(context);
    flush_file(true);
  }
  return inner_->ReportContext(context);
}

void HostReporter::ReportRuns(const std::vector<Run>& runs) {
  std::vector<Run> kept;
  for (const Run& r : runs) {
    if (!left_out(r)) kept.push_back(r);
  }
  if (!kept.empty()) inner_->ReportRuns(kept);
  if (runs.empty()) return;
  const std::string name = runs.front().run_name.function_name;
  const bool first_time = seen_.insert(name).second;
  cases_done_ += first_time;
  if (file_format_ && !kept.empty()) {
    file_format_->ReportRuns(kept);
    flush_file(true);
  }
  if (!progress_) return;

  const Clock::time_point now = Clock::now();
  if (first_time) progress_->finished(detail::family_of(name), seconds_between(last_case_, now));
  last_case_ = now;
  if (seconds_between(last_print_, now) < kPrintEverySeconds) return;
  last_print_ = now;
  GetOutputStream().flush();
  std::fprintf(stderr, "xfbench: %zu/%zu cases, %s elapsed, about %s left\n", progress_->done(),
               progress_->total(), clock_text(seconds_between(start_, now)).c_str(),
               clock_text(progress_->seconds_left()).c_str());
}

void HostReporter::Finalize() {
  inner_->Finalize();
  if (file_format_) {
    file_format_->Finalize();
    flush_file(false);
  }
}

std::unique_ptr<benchmark::BenchmarkReporter> file_reporter_for(const std::string& format) {
  if (format == "console") {
    return std::make_unique<benchmark::ConsoleReporter>(benchmark::ConsoleReporter::OO_None);
  }
  if (format == "csv") {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    return std::make_unique<benchmark::CSVReporter>();
#pragma GCC diagnostic pop
  }
  return std::make_unique<benchmark::JSONReporter>();
}

}  // namespace xfbench::host
