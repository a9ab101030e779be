#include "step_parts.hpp"

#include <cstdio>
#include <cstdlib>
#include <map>

#include "kernels/models/language_model.hpp"
#include "xfbench/counters.hpp"  // median
#include "xfbench/memory.hpp"

namespace xfbench::train {

std::string step_parts_line(const std::string& name, const std::vector<StepParts>& steps) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<double>> per_step;  // part -> its time in each step
  for (std::size_t i = 0; i < steps.size(); ++i) {
    for (const auto& [part, ms] : steps[i]) {
      std::vector<double>& t = per_step[part];
      if (t.empty()) order.push_back(part);
      t.resize(steps.size(), 0.0);  // a part a step lacks counts 0 there
      t[i] += ms;
    }
  }
  std::string line = "step parts " + name + ", median of " + std::to_string(steps.size()) +
                     (steps.size() == 1 ? " step:" : " steps:");
  char buf[96];
  double sum = 0;
  for (std::size_t j = 0; j < order.size(); ++j) {
    const double ms = median(per_step[order[j]]);
    sum += ms;
    std::snprintf(buf, sizeof buf, "%s %s %.2f ms", j ? "," : "", order[j].c_str(), ms);
    line += buf;
  }
  std::snprintf(buf, sizeof buf, "; sum %.2f ms", sum);
  return line + buf;
}

std::vector<StepParts> profile_step_parts(kernels::LanguageModel& model, int steps,
                                          cudaStream_t s) {
  std::vector<StepParts> out;
  for (int i = 0; i < steps; ++i) {
    Event start;
    std::vector<std::pair<std::string, Event>> ends;
    model.set_part_marks([&](const char* part, cudaStream_t st) {
      ends.emplace_back(part, Event());
      ends.back().second.record(st);
    });
    start.record(s);
    try {
      model.step(s);
    } catch (...) {
      model.set_part_marks({});
      throw;
    }
    model.set_part_marks({});
    StepParts parts;
    const Event* before = &start;
    for (const auto& [part, end] : ends) {
      parts.emplace_back(part, double(end.elapsed_ms_since(*before)));
      before = &end;
    }
    out.push_back(std::move(parts));
  }
  return out;
}

void print_step_parts(const std::string& name, kernels::LanguageModel& model, cudaStream_t s) {
  const char* v = std::getenv("XFBENCH_STEP_PARTS");
  if (!v || std::string(v) != "1") return;
  std::fprintf(stderr, "%s\n", step_parts_line(name, profile_step_parts(model, 5, s)).c_str());
}

}  // namespace xfbench::train
