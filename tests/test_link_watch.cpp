// A slow link is not a slow rank: the watch over the step's communication time (the least wait of
// a group's ranks) says when the links slowed and when they recovered (parallel/balance/link_watch.h).
#include <doctest/doctest.h>

#include <vector>

#include "parallel/balance/link_watch.h"
#include "parallel/balance/monitor.h"

using namespace flextp;
using Event = LinkWatch::Event;

namespace {
std::vector<Event> feed(LinkWatch& w, const std::vector<double>& ms) {
  std::vector<Event> out;
  for (double m : ms) out.push_back(w.record(m));
  return out;
}
}  // namespace

TEST_CASE("the links slowed: two steps in a row well above the usual level; recovered: two back within it") {
  LinkWatch w;
  // Step 1 sets up connections (ignored), then ~10 ms a step; the link slows to 80 ms at the 6th.
  std::vector<Event> e = feed(w, {50, 10, 11, 9, 10, 80, 82, 79, 81, 10, 11, 10});
  CHECK(e[5] == Event::None);  // one step could be a blip
  CHECK(e[6] == Event::Slowed);
  CHECK(w.usual_ms() == doctest::Approx(10).epsilon(0.1));  // frozen at the level before
  CHECK(e[7] == Event::None);
  CHECK(e[8] == Event::None);
  CHECK(e[9] == Event::None);
  CHECK(e[10] == Event::Recovered);
  CHECK(!w.slow());
  CHECK(w.since_step() == 10);  // the sample that started the recovery (counted from 1)
}

TEST_CASE("no link event for a blip, sub-ms jitter, or a slow rank that leaves the least wait alone") {
  LinkWatch w;
  // A blip: one step of 60 ms.
  for (Event e : feed(w, {50, 10, 10, 60, 10, 10})) CHECK(e == Event::None);
  // Two separate blips, a normal step between them: not two in a row, so nothing (nor a recovery).
  LinkWatch twice;
  for (Event e : feed(twice, {50, 10, 10, 60, 10, 60, 10, 10})) CHECK(e == Event::None);
  CHECK(!twice.slow());
  // Jitter: 1 -> 5-9 ms is up to 9x, but under the 10 ms floor.
  LinkWatch shm;
  for (Event e : feed(shm, {5, 1, 1, 5.3, 9.3, 5, 1})) CHECK(e == Event::None);
  // 10 -> 45 ms beside a 400 ms step: not a tenth of it.
  LinkWatch big;
  for (double ms : {50.0, 10.0, 10.0, 45.0, 45.0, 46.0}) CHECK(big.record(ms, 400) == Event::None);
  // A slow rank: the others' waits grow, the least wait (the slow rank's own) does not.
  LinkWatch group;
  std::vector<std::vector<double>> waits = {{10, 10}, {10, 11}, {10, 60}, {11, 62}, {10, 61}};
  for (const auto& step : waits) CHECK(group.record(std::min(step[0], step[1])) == Event::None);
}

TEST_CASE("the step a move is judged by leaves the transfers' own time out: a slow link is not a bad move") {
  auto row = [](double compute, double wait) {
    RankRow r;
    r.compute_ms = compute, r.wait_ms = wait;
    return r;
  };
  // Two ranks, 40 and 30 ms of compute, 5 ms of transfers: the step the partition decides is 40 ms.
  CHECK(step_ms_of({row(40, 5), row(30, 15)}) == doctest::Approx(40));
  // The link slows: 300 ms more in every collective, for both ranks alike. Nothing a move changes.
  CHECK(step_ms_of({row(40, 305), row(30, 315)}) == doctest::Approx(40));
  // A straggler: rank 1 computes 80 ms; rank 0 waits for it. That a move can change.
  CHECK(step_ms_of({row(40, 45), row(80, 5)}) == doctest::Approx(80));
}
