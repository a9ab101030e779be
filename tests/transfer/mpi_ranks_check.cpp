// Ranks under mpirun without a GPU (CI's MPI step, .ci/run), built with XFBENCH_WITH_MPI:
//   mpi_ranks_check agree      every rank times its own windows through the steady protocol with
//                              MPI's max as the agreement: all stop at the same window with the
//                              same numbers; a validation failing on rank 1 fails on every rank
//                              with rank 1's message. Exit 0, or 1 naming what differed.
//   mpi_ranks_check straggler  rank 1 arrives 60 s late at an all-reduce (time-out 1 s): rank 0
//                              ends the job, one line, exit 6.
//   mpi_ranks_check fail       rank 1 fails inside a collective section while rank 0 waits for
//                              it (time-out 60 s): rank 1 ends the job at once, its line, exit 6.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <thread>

#include "kernels/comm/nccl_comm.hpp"
#include "xfbench/error.hpp"
#include "xfbench/steady_state.hpp"

namespace {

using namespace xfbench::kernels;

// Equal on every rank: max(v) == -max(-v).
bool same_on_every_rank(double v) { return max_over_ranks(v) == -max_over_ranks(-v); }

int agree() {
  const int rank = world_rank();
  xfbench::SteadyState rule(xfbench::SteadyStateOptions{},
                            [](double* v, std::size_t n) { max_over_ranks(v, n); });
  // Rank r: windows of 10 launches, 10 ms with 2% jitter of its own phase, 1% slower per rank.
  int n = 0;
  for (;; ++n) {
    const double window = 10e-3 * (1 + 0.01 * rank) * (1 + 0.02 * std::sin(1.7 * n + rank));
    if (rule.add(window / 10, window)) break;
  }
  const xfbench::SteadyStateResult& r = rule.result();
  std::printf("rank %d: stopped after %d windows, %d measured, %.6g ms per launch, converged %d\n",
              rank, n + 1, r.windows, 1e3 * r.seconds, int(r.converged));
  int failures = 0;
  for (double v : {double(n), double(r.windows), r.seconds, r.cv, r.ci, r.drift, r.warmup_s}) {
    failures += !same_on_every_rank(v);
  }
  if (failures) std::printf("rank %d: %d numbers differ between the ranks\n", rank, failures);

  std::string got;
  try {
    agreed_validation([&]() -> std::string {
      if (rank == 1) XF_THROW(ValidationError, "loss 9.1 did not fall");
      return "ok";
    });
  } catch (const xfbench::ValidationError& e) {
    got = e.message();
  }
  if (got != "rank 1: loss 9.1 did not fall") {
    std::printf("rank %d: agreed_validation gave '%s'\n", rank, got.c_str());
    ++failures;
  }
  return failures ? 1 : 0;
}

int straggler() {
  set_nccl_timeout(1);
  if (world_rank() == 1) std::this_thread::sleep_for(std::chrono::seconds(60));
  max_over_ranks(1.0);
  std::printf("rank %d: the all-reduce completed\n", world_rank());
  return 1;
}

int fail() {
  set_nccl_timeout(60);
  collective_section("Case/fail", [] {
    if (world_rank() == 1) XF_THROW(Unsupported, "out of memory (2.0 GB more than free)");
    max_over_ranks(1.0);
  });
  std::printf("rank %d: the section completed\n", world_rank());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  mpi_init_if_launched();
  if (!mpi_enabled() || world_size() != 2) {
    std::fprintf(stderr, "mpi_ranks_check: run under mpirun -np 2 (%s)\n",
                 mpi_build_status().c_str());
    return 2;
  }
  if (mode == "agree") return agree();
  if (mode == "straggler") return straggler();
  if (mode == "fail") return fail();
  std::fprintf(stderr, "mpi_ranks_check: agree, straggler or fail\n");
  return 2;
}
