// The TrainStep family's cases: a name per configuration (every knob in it), and the case body
// that builds the model, validates its training, searches its GEMM algorithms and times the step.
#pragma once

#include <string>
#include <vector>

#include "kernels/models/language_model.hpp"
#include "xfbench/case.hpp"
#include "xfbench/timer.hpp"

namespace xfbench::train {

// TrainStep/<backend>/<model>/<precision>/seq:S/batch:B/accum:A/ckpt:<on|off>/adamw:<fused|
// unfused> + model_tag (custom sizes: "/layers:L/hidden:H/..."; empty for a named model).
std::string case_name(const kernels::TrainConfig& c, const std::string& model_tag = "");

// Adds the case. check_train_config runs now: InvalidArgument propagates (the host exits 2),
// Unsupported becomes the case's skip reason. When it runs: memory is planned (a step that does
// not fit is skipped with "out of memory: needs ~X GB, Y GB free" and a hint), training is
// validated (train_validate.hpp), the model re-initialised, its GEMMs tuned (`search`), and the
// step timed. Counters: samples/s, tokens/s, TFLOPS (train_flops_per_sample), pct_peak and MFU
// (the same: % of the dtype's dense peak), mem_GB (device memory the case took, measured),
// loss (the last step's), skipped (fp16: steps skipped on overflow). `graph`: each timed step is
// one replay of a CUDA graph captured from a step (TimerOptions::graph_each_launch; dropout 0:
// a replay draws the masks it captured), the name ending in /graph:on.
void add_train_case(const std::string& name, const kernels::TrainConfig& c, Suite suite,
                    bool search = true, bool graph = false);

// Bytes of device memory in use now (cudaMemGetInfo).
std::size_t device_memory_used();

// Counters of a timed step of `ranks` GPUs, each training on batch·accum samples (tensor parallel:
// each group of c.tp_size GPUs shares them, each GPU doing 1/tp_size of the work): samples/s and
// tokens/s of all of them, TFLOPS (train_flops_per_sample), pct_peak and MFU per GPU.
void set_train_counters(benchmark::State& state, const Timing& t, const kernels::TrainConfig& c,
                        int ranks);
// samples/s of the case `name` if it ran earlier in this process, else 0 (`scaling`).
double recorded_samples_per_second(const std::string& name);

}  // namespace xfbench::train
