// Where a training step's time goes (XFBENCH_STEP_PARTS=1): CUDA events at the ends of the step's
// parts (kernels::LanguageModel::set_part_marks), read after the case's timing, never inside it.
#pragma once

#include <cuda_runtime_api.h>

#include <string>
#include <utility>
#include <vector>

namespace xfbench::kernels {
class LanguageModel;
}

namespace xfbench::train {

// One step's parts in the order they ended: (part, milliseconds since the one before ended).
using StepParts = std::vector<std::pair<std::string, double>>;

// "step parts <case>, median of N steps: embeddings 0.41 ms, blocks forward 45.20 ms, ...; sum
// 149.54 ms": each part's time in a step (summed over the step's micro-batches, which repeat
// their parts), the median over the steps, in the order the parts first ended. Pure.
std::string step_parts_line(const std::string& name, const std::vector<StepParts>& steps);

// `steps` steps of `model` on stream s, each part's end marked by an event: their times (waits).
std::vector<StepParts> profile_step_parts(kernels::LanguageModel& model, int steps, cudaStream_t s);

// With XFBENCH_STEP_PARTS=1 in the environment: five steps profiled, their line on stderr.
void print_step_parts(const std::string& name, kernels::LanguageModel& model, cudaStream_t s);

}  // namespace xfbench::train
