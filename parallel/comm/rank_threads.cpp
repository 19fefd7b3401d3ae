#include "parallel/comm/rank_threads.h"

#include <omp.h>
#include <sched.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "parallel/comm/mpi_communicator.h"

namespace flextp {
namespace {

// A whole number >= 1, or 0.
int positive_count(const char* text) {
  if (text == nullptr || *text == '\0') return 0;
  char* end = nullptr;
  long n = std::strtol(text, &end, 10);
  return *end == '\0' && n >= 1 && n <= 1 << 20 ? static_cast<int>(n) : 0;
}

}  // namespace

RankThreads choose_rank_threads(const char* omp_num_threads, int cores, int local_ranks) {
  if (int n = positive_count(omp_num_threads)) return {n, "OMP_NUM_THREADS=" + std::string(omp_num_threads)};
  cores = cores < 1 ? 1 : cores;
  local_ranks = local_ranks < 1 ? 1 : local_ranks;
  const int threads = cores / local_ranks < 1 ? 1 : cores / local_ranks;
  std::string why = std::to_string(cores) + (cores == 1 ? " core / " : " cores / ") + std::to_string(local_ranks) +
                    (local_ranks == 1 ? " rank on this node" : " ranks on this node");
  if (omp_num_threads != nullptr) why += "; OMP_NUM_THREADS='" + std::string(omp_num_threads) + "' is no thread count";
  return {threads, why};
}

int cores_of_this_process() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set);
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? static_cast<int>(online) : 1;
}

int ranks_on_this_node() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"})
    if (int n = positive_count(std::getenv(name))) return n;
  return MpiRuntime::active() ? mpi_ranks_on_this_node() : 1;
}

RankThreads set_rank_threads() {
  RankThreads t = choose_rank_threads(std::getenv("OMP_NUM_THREADS"), cores_of_this_process(), ranks_on_this_node());
  omp_set_num_threads(t.threads);
  return t;
}

}  // namespace flextp
