// What the host's exit code says (the README's table), in one place for the host and the libraries
// that end a process themselves (libxfbench_nccl under MPI).
#pragma once

namespace xfbench {

enum ExitCode : int {
  kAllRan = 0,        // every selected case ran (unsupported cases skipped with their reason)
  kCasesFailed = 1,   // at least one case failed: error, validation failure, broken CUDA context
  kInvalidArgs = 2,   // bad flag or flag value; nothing ran
  kPluginErrors = 3,  // a plugin could not be loaded (unless --xfbench_allow_plugin_errors)
  kNoGpu = 4,         // GPU cases selected but no usable CUDA device
  kFaultyGpu = 5,     // a case judged a GPU or CPU socket faulty (report_faulty_device, case.hpp)
  kRankFailed = 6,    // under MPI a rank failed inside a multi-GPU case: MPI_Abort ends the job
                      // (raised in libxfbench_nccl, not by the host)
  kOutputLost = 7,    // the --benchmark_out file could not be written (a full disk): results lost
};
// Killed by signal N (Ctrl-C, SIGTERM, a crash): 128 + N as shells report it; the JSON is closed
// first with "interrupted" (the host's result_file.hpp).

}  // namespace xfbench
