// Ranks played by threads (bench/thread_ranks.h, bench_simulate --oracle's communicator): their
// collectives agree as one communicator's would, round after round, and a failed rank releases
// the others instead of leaving them waiting.
#include <doctest/doctest.h>

#include <thread>
#include <vector>

#include "bench/thread_ranks.h"
#include "core/error.h"

using namespace flextp;

TEST_CASE("threads playing 4 ranks gather, reduce and broadcast alike, round after round") {
  const int n = 4, rounds = 20;
  ThreadMeeting meeting(n);
  // Per rank, per round: the gathered values, the sum and max, the broadcast value.
  std::vector<std::vector<std::vector<double>>> seen(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      ThreadRank comm(meeting, r);
      for (int round = 0; round < rounds; ++round) {
        const double mine = 10.0 * round + r;
        Tensor all = Tensor::empty({n, 1}, DType::F64);
        comm.all_gather(Tensor::from_vector<double>({mine}, {1, 1}), all);
        Tensor sum = Tensor::from_vector<double>({mine}, {1}), max = sum.clone();
        comm.all_reduce(sum, ReduceOp::Sum);
        comm.all_reduce(max, ReduceOp::Max);
        Tensor root = Tensor::from_vector<float>({static_cast<float>(mine)}, {1});
        comm.broadcast(root, round % n);
        std::vector<double> row = all.to_vector<double>();
        row.push_back(sum.item());
        row.push_back(max.item());
        row.push_back(root.item());
        seen[r].push_back(row);
      }
    });
  for (std::thread& t : threads) t.join();
  for (int r = 0; r < n; ++r)
    for (int round = 0; round < rounds; ++round) {
      const double base = 10.0 * round;
      CHECK(seen[r][round] == std::vector<double>{base, base + 1, base + 2, base + 3, 4 * base + 6, base + 3,
                                                  base + round % n});
    }
}

TEST_CASE("a rank that failed releases the others' collectives with an error") {
  ThreadMeeting meeting(2);
  bool released = false;
  std::thread waiting([&] {
    try {
      meeting.wait();
    } catch (const Error&) {
      released = true;
    }
  });
  while (meeting.waiting() == 0) std::this_thread::yield();
  meeting.fail();
  waiting.join();
  CHECK(released);
  CHECK_THROWS_WITH_AS(meeting.wait(), doctest::Contains("another rank's thread failed"), Error);
}
