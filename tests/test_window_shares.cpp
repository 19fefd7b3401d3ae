// Window shares across data-parallel replicas (parallel/dp/window_shares.h): whole micro-steps in
// proportion to speed, summing to the batch; the hysteresis; where each replica's windows lie.
#include <doctest/doctest.h>

#include <numeric>

#include "core/error.h"
#include "parallel/dp/grid.h"
#include "parallel/dp/window_shares.h"

using namespace flextp;

namespace {

int64_t sum(const std::vector<int64_t>& v) { return std::accumulate(v.begin(), v.end(), int64_t{0}); }

// The least slowest-replica time over every split of `batch` windows into whole micro-steps of
// `unit`, at least one per replica (three replicas), found by trying them all.
double best_by_search(const std::vector<double>& speed, int64_t batch, int64_t unit) {
  double best = 1e300;
  for (int64_t a = unit; a < batch; a += unit)
    for (int64_t b = unit; a + b < batch; b += unit)
      best = std::min(best, predicted_step_ms({a, b, batch - a - b}, speed));
  return best;
}

}  // namespace

TEST_CASE("window shares follow the replicas' speeds in whole windows and sum to the batch") {
  CHECK(proportional_shares({1, 1, 1, 1}, 8, 0) == std::vector<int64_t>{2, 2, 2, 2});
  CHECK(proportional_shares({3, 1}, 8, 0) == std::vector<int64_t>{6, 2});
  CHECK(proportional_shares({1, 3}, 8, 0) == std::vector<int64_t>{2, 6});
  CHECK(proportional_shares({5, 1, 1, 1}, 8, 0) == std::vector<int64_t>{5, 1, 1, 1});
  CHECK(proportional_shares({1, 1}, 5, 0) == std::vector<int64_t>{3, 2});  // a tie: the lower replica
  // In micro-steps: multiples of the micro-batch, one at least even for a replica far slower.
  CHECK(proportional_shares({3, 1}, 8, 2) == std::vector<int64_t>{6, 2});
  CHECK(proportional_shares({100, 1}, 8, 2) == std::vector<int64_t>{6, 2});
  CHECK(proportional_shares({1, 1}, 8, 4) == std::vector<int64_t>{4, 4});
  // Against every split: the slowest replica finishes as early as it can.
  for (int64_t unit : {1, 2, 3})
    for (const std::vector<double>& speed :
         {std::vector<double>{1, 2, 3}, {0.7, 0.3, 0.35}, {5, 1, 1}, {1, 1, 1.01}, {2.5, 0.1, 9}}) {
      const int64_t batch = 12 * unit;
      std::vector<int64_t> shares = proportional_shares(speed, batch, unit);
      INFO("unit ", unit, " speeds ", speed[0], " ", speed[1], " ", speed[2]);
      CHECK(sum(shares) == batch);
      for (int64_t s : shares) CHECK((s >= unit && s % unit == 0));
      CHECK(predicted_step_ms(shares, speed) == doctest::Approx(best_by_search(speed, batch, unit)));
    }
}

TEST_CASE("window shares change only when the step clearly gains, and never before speeds are measured") {
  ReplicaView now{{4, 4}, {1, 1}, 0, true};
  CHECK(speed_shares(now) == std::vector<int64_t>{4, 4});
  now.speed = {1, 3};
  CHECK(speed_shares(now) == std::vector<int64_t>{2, 6});
  // 3/5 at 1 : 1.3 would finish 3.8% sooner than 4/4: noise, not worth a change.
  now.speed = {1, 1.3};
  CHECK(speed_shares(now) == std::vector<int64_t>{4, 4});
  CHECK(speed_shares(now, 0.0) == std::vector<int64_t>{3, 5});
  // Once moved, back only when the other way gains clearly too.
  ReplicaView moved{{2, 6}, {1, 1.9}, 0, true};
  CHECK(speed_shares(moved) == std::vector<int64_t>{2, 6});  // 3/5 would gain 5%
  CHECK(speed_shares(moved, 0.0) == std::vector<int64_t>{3, 5});
  moved.speed = {1, 1};
  CHECK(speed_shares(moved) == std::vector<int64_t>{4, 4});
  // Not measured yet, fixed even, one replica: as they are.
  CHECK(speed_shares({{4, 4}, {0, 3}, 0, true}) == std::vector<int64_t>{4, 4});
  CHECK(speed_shares({{4, 4}, {1, 3}, 0, false}) == std::vector<int64_t>{4, 4});
  CHECK(speed_shares({{8}, {1}, 0, true}) == std::vector<int64_t>{8});
  // Whole micro-steps.
  CHECK(speed_shares({{4, 4}, {1, 3}, 4, true}) == std::vector<int64_t>{4, 4});
  CHECK(speed_shares({{8, 8}, {1, 3}, 4, true}) == std::vector<int64_t>{4, 12});
}

TEST_CASE("window shares refuse bad input with a message naming the problem") {
  CHECK_THROWS_WITH_AS(proportional_shares({1, 0}, 8, 0), doctest::Contains("replica 1's speed is 0"), Error);
  CHECK_THROWS_WITH_AS(proportional_shares({1, -2}, 8, 0), doctest::Contains("must be positive"), Error);
  CHECK_THROWS_WITH_AS(proportional_shares({1, 1}, 9, 2), doctest::Contains("not whole micro-steps of 2"), Error);
  CHECK_THROWS_WITH_AS(proportional_shares({1, 1, 1}, 4, 2), doctest::Contains("too few for one on each of 3"), Error);
  CHECK_THROWS_WITH_AS(proportional_shares({}, 4, 0), doctest::Contains("no replicas"), Error);
  CHECK_THROWS_WITH_AS(speed_shares({{4, 4}, {1}, 0, true}), doctest::Contains("2 window shares for 1"), Error);
  CHECK_THROWS_WITH_AS(speed_shares({{4, 4}, {1, 1}, 0, true}, 1.0), doctest::Contains("minimum gain"), Error);
  CHECK_THROWS_WITH_AS(even_shares(6, 4, 0), doctest::Contains("does not split evenly over 4 replicas"), Error);
  CHECK_THROWS_WITH_AS(even_shares(8, 2, 3), doctest::Contains("does not divide this replica's share of 4"), Error);
  CHECK(even_shares(8, 2, 2) == std::vector<int64_t>{4, 4});
  CHECK_NOTHROW(check_shares({6, 2}, 2, 8, 2, "shares"));
  CHECK_THROWS_WITH_AS(check_shares({6, 1}, 2, 7, 2, "shares"), doctest::Contains("positive multiple of 2"), Error);
  CHECK_THROWS_WITH_AS(check_shares({6, 0}, 2, 6, 0, "shares"), doctest::Contains("replica 1 0 windows"), Error);
  CHECK_THROWS_WITH_AS(check_shares({6, 4}, 2, 8, 0, "shares"), doctest::Contains("sum to 10 windows, not the batch of 8"),
                       Error);
  CHECK_THROWS_WITH_AS(check_shares({8}, 2, 8, 0, "shares"), doctest::Contains("1 shares for 2 replicas"), Error);
}

TEST_CASE("each replica's windows follow those of the replicas before it: none skipped and none twice") {
  const std::vector<int64_t> shares{5, 1, 2};
  int64_t next = 0;
  for (int d = 0; d < 3; ++d) {
    Grid g = Grid::of(6, d * 2 + 1, 2);
    std::pair<int64_t, int64_t> w = g.windows(shares);
    CHECK(w.first == next);
    CHECK(w.second == shares[d]);
    next += w.second;
  }
  CHECK(next == 8);
  // The even split is the same as before.
  Grid g = Grid::of(4, 3, 1);
  CHECK(g.windows(std::vector<int64_t>{2, 2, 2, 2}) == g.windows(int64_t{8}));
  CHECK_THROWS_WITH_AS(g.windows(std::vector<int64_t>{4, 4}), doctest::Contains("2 window shares for 4 replicas"), Error);
}
