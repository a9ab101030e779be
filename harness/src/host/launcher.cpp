#include "launcher.hpp"

#include <cstdlib>
#include <initializer_list>

namespace xfbench::host {

const char* launcher_rank() {
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    if (const char* rank = std::getenv(var)) return rank;
  }
  return nullptr;
}

int launcher_local_rank() {
  for (const char* var :
       {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID", "LOCAL_RANK"}) {
    const char* value = std::getenv(var);
    char* end = nullptr;
    if (!value || !*value) continue;
    const long rank = std::strtol(value, &end, 10);
    if (*end == '\0' && rank >= 0 && rank < 1 << 20) return int(rank);
  }
  return -1;
}

int default_device(bool flag_given, long flag, int local_rank, int visible) {
  if (flag_given || local_rank < 0 || visible <= 0) return int(flag);
  return local_rank % visible;
}

}  // namespace xfbench::host
