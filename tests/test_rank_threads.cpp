// OpenMP threads per rank (parallel/comm/rank_threads.h): OMP_NUM_THREADS decides when set; else
// each rank takes the cores it may use over the ranks on its machine, at least one, and train's
// header says which. The inputs are injected: no test depends on this machine's cores.
#include <doctest/doctest.h>

#include <string>

#include "parallel/comm/rank_threads.h"
#include "tests/run_command.h"
#include "tests/temp_dir.h"

using namespace flextp;

TEST_CASE("threads per rank: the cores over the ranks on this node, at least one, unless OMP_NUM_THREADS says") {
  CHECK(choose_rank_threads(nullptr, 2, 1).threads == 2);
  CHECK(choose_rank_threads(nullptr, 2, 2).threads == 1);
  CHECK(choose_rank_threads(nullptr, 2, 4).threads == 1);  // more ranks than cores: one each, never 0
  CHECK(choose_rank_threads(nullptr, 16, 4).threads == 4);
  CHECK(choose_rank_threads(nullptr, 7, 2).threads == 3);  // rounded down: 2 x 3 threads fit in 7 cores
  CHECK(choose_rank_threads(nullptr, 0, 0).threads == 1);  // unknown counts
  CHECK(choose_rank_threads(nullptr, 16, 4).why == "16 cores / 4 ranks on this node");
  CHECK(choose_rank_threads(nullptr, 1, 1).why == "1 core / 1 rank on this node");

  RankThreads set = choose_rank_threads("3", 16, 4);
  CHECK(set.threads == 3);
  CHECK(set.why == "OMP_NUM_THREADS=3");
  for (const char* bad : {"", "0", "-2", "abc", "2x"}) {
    CAPTURE(bad);
    RankThreads t = choose_rank_threads(bad, 16, 4);
    CHECK(t.threads == 4);
    if (*bad) CHECK(t.why.find("is no thread count") != std::string::npos);
  }
}

TEST_CASE("train without OMP_NUM_THREADS takes its share of the cores and says so in its header") {
  test::TempDir dir("rankthreads");
  std::string base = "cd " + dir.path.string() + " && env -u OMP_NUM_THREADS ";
  std::string train = test::train_binary() + " " + test::kTiny + " --data " + test::corpus(dir) + " --steps 1 --no-save";
  // The launcher's count of ranks on this node, injected: one process believes it shares the
  // machine with 64 others.
  test::Run crowded = test::run_command(base + "OMPI_COMM_WORLD_LOCAL_SIZE=64 " + train);
  REQUIRE_MESSAGE(crowded.status == 0, crowded.output);
  CHECK_MESSAGE(crowded.output.find("1 OpenMP thread per rank (") != std::string::npos, crowded.output);
  CHECK_MESSAGE(crowded.output.find(" / 64 ranks on this node)") != std::string::npos, crowded.output);

  test::Run told = test::run_command("cd " + dir.path.string() + " && OMP_NUM_THREADS=1 " + train);
  REQUIRE_MESSAGE(told.status == 0, told.output);
  CHECK_MESSAGE(told.output.find("1 OpenMP thread per rank (OMP_NUM_THREADS=1)") != std::string::npos, told.output);
}
