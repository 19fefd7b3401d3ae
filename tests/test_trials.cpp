// The closed loop (parallel/balance/trials.h), driven by step times instead of clocks: a change
// that makes steps slower is undone within its window, one that pays is kept, failed tries back
// off and stop oscillating, new speeds start afresh, and the learned correction converges on a
// rank whose true speed differs from what its compute time says.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "parallel/balance/trials.h"
#include "tests/unit_cost_groups.h"

using namespace flextp;

namespace {

const std::vector<double> kEqual = {1.0, 1.0};

// `n` steps of `ms` each; the verdicts seen, space-separated ("" for none).
std::string feed(Trials& t, int n, double ms, const std::vector<double>& speeds = kEqual) {
  std::string out;
  for (int i = 0; i < n; ++i) {
    TrialEvent e = t.observe(ms, speeds);
    if (e != TrialEvent::none) out += std::string(out.empty() ? "" : " ") + (e == TrialEvent::kept ? "kept" : "undone");
  }
  return out;
}

// A trial of `o` steps (settle + measure) is judged on its last step, not before.
int64_t window(const TrialOptions& o) { return o.settle + o.measure; }

}  // namespace

TEST_CASE("trials: a change that makes the steps slower is undone on the last step of its window") {
  Trials t;
  feed(t, 6, 100);
  REQUIRE(t.may_start());
  t.start(Change::move, 0.2, "even", "2:1");
  CHECK_FALSE(t.may_start());  // one change at a time
  CHECK(feed(t, static_cast<int>(window(t.options())) - 1, 104) == "");
  CHECK(feed(t, 1, 104) == "undone");
  CHECK(t.before_ms() == doctest::Approx(100));
  CHECK(t.after_ms() == doctest::Approx(104));
  CHECK(t.backoff_left() == t.options().backoff_first);
  CHECK(t.known_worse("2:1"));
  CHECK_FALSE(t.known_worse("even"));
}

TEST_CASE("trials: a change that pays is kept, and the steps after it are the new baseline") {
  Trials t;
  feed(t, 6, 100);
  t.start(Change::move, 0.2, "even", "2:1");
  CHECK(feed(t, static_cast<int>(window(t.options())), 85) == "kept");
  CHECK(t.measured_gain() == doctest::Approx(0.15));
  CHECK(t.recent_ms() == doctest::Approx(85));
  CHECK(t.may_start());  // no backoff after a kept change
  CHECK(t.known_worse("even"));

  SUBCASE("a gain within keep_gain does not pay") {
    Trials u;
    feed(u, 6, 100);
    u.start(Change::resize, 0, "even", "even resized");
    CHECK(feed(u, static_cast<int>(window(u.options())), 99) == "undone");
  }
  SUBCASE("the median judges: one slow step in the window does not undo") {
    Trials u;
    feed(u, 6, 100);
    u.start(Change::move, 0.2, "even", "2:1");
    CHECK(feed(u, static_cast<int>(window(u.options())) - 1, 80) + feed(u, 1, 300) == "kept");
  }
}

TEST_CASE("trials: failed tries back off twice as long each time and never oscillate; new speeds start afresh") {
  Trials t;
  feed(t, 3, 100);
  // A policy that tries to move whenever it may, and every move makes the step slower.
  int tries = 0;
  std::vector<int64_t> backoffs;
  for (int step = 0; step < 1500; ++step) {
    if (t.may_start()) {
      t.start(Change::move, 0.1, "even", "2:1");
      ++tries;
    }
    if (feed(t, 1, t.under_way() ? 120 : 100) == "undone") backoffs.push_back(t.backoff_left());
  }
  CHECK(backoffs == std::vector<int64_t>{16, 32, 64, 128, 256, 512, 512});  // at most backoff_max
  CHECK(tries == 7);
  CHECK(t.failures() == 7);
  // Rank 1 slows down for good: what was measured no longer holds, and tries may start at once.
  feed(t, 1, 150, {1.0, 0.5});
  CHECK(t.failures() == 0);
  CHECK(t.may_start());
  CHECK_FALSE(t.known_worse("2:1"));
}

TEST_CASE("trials: the first step is never measured; a change needs a step before it") {
  Trials t;
  CHECK_FALSE(t.may_start());
  feed(t, 1, 5000);  // start-up: allocations, caches, the calibration
  CHECK_FALSE(t.may_start());
  feed(t, 1, 100);
  CHECK(t.may_start());
  CHECK(t.recent_ms() == doctest::Approx(100));
}

TEST_CASE("trials: a verdict across new speeds is inconclusive (no backoff); a cancelled resize restores the baseline") {
  Trials t;
  feed(t, 5, 100);
  t.start(Change::move, 0.2, "even", "2:1");
  feed(t, 2, 120);
  CHECK(feed(t, 3, 150, {1.0, 0.4}) == "undone");
  CHECK(t.inconclusive());
  CHECK(t.failures() == 0);
  CHECK(t.backoff_left() == 0);
  CHECK_FALSE(t.known_worse("2:1"));

  Trials r;
  feed(r, 5, 100);
  r.start(Change::resize, 0, "even", "even resized");
  feed(r, 2, 90);
  r.cancel();
  CHECK_FALSE(r.under_way());
  CHECK(r.recent_ms() == doctest::Approx(100));
}

TEST_CASE("trials: a move decided on the first steps of a slowdown is judged against them, not the steps before") {
  Trials t;
  feed(t, 5, 80);
  feed(t, 1, 190);  // rank 1 slows down; the smoothed speeds have not moved much yet
  t.start(Change::move, 0.1, "even", "2:1");
  CHECK(t.before_ms() == doctest::Approx(190));
  CHECK(feed(t, static_cast<int>(window(t.options())), 130) == "kept");
  Trials jitter;  // steps within 25% of each other are one level: their median
  feed(jitter, 1, 500);  // start-up, unmeasured
  for (double ms : {100.0, 110.0, 90.0, 105.0}) feed(jitter, 1, ms);
  jitter.start(Change::move, 0.1, "even", "2:1");
  CHECK(jitter.before_ms() == doctest::Approx(102.5));
}

TEST_CASE("trials: a resize is judged against the last step alone; tries wait for steady speeds") {
  Trials t;
  feed(t, 5, 100);
  feed(t, 1, 200);  // the step a resizing policy reacts to
  t.start(Change::resize, 0.4, "even", "even resized");  // predicted: 200 -> 120 ms
  CHECK(t.before_ms() == doctest::Approx(200));
  CHECK(feed(t, static_cast<int>(window(t.options())), 120) == "kept");

  Trials s;
  for (int i = 0; i < 20; ++i) feed(s, 1, 100, i % 2 ? std::vector<double>{1.0, 0.6} : kEqual);
  CHECK_FALSE(s.steady());
  feed(s, static_cast<int>(s.options().steady_steps), 100);
  CHECK_FALSE(s.steady());  // the first equal step starts the count
  feed(s, 1, 100);
  CHECK(s.steady());
}

TEST_CASE("the learned correction converges on a rank slower than its compute time says") {
  // 24 + 24 units of work 1; the monitor measures rank 1 at half of rank 0's speed, but its
  // steps show it at 0.4 (time it loses off its core that its compute segments do not see).
  const std::vector<UnitGroup> groups = test::unit_cost_groups();
  const ModelCosts c = test::unit_costs_of_one();
  const std::vector<double> measured = {1.0, 0.5}, truth = {1.0, 0.4};
  const Partition even = Partition::even(groups, 2);
  // The model's first guess at the balanced split, and what the machine really does with it.
  const Partition guess = balanced_partition(even, measured, c);
  const double overhead_ms = 7;  // the collectives' own time, in every step and not in the model
  auto step_ms = [&](const Partition& p) { return predicted_step_ms(p, truth, c) + overhead_ms; };
  std::vector<double> k = {1.0, 1.0};
  for (int trial = 0; trial < 12; ++trial) k = learn_correction(even, guess, measured, c, k, step_ms(even) - step_ms(guess));
  CHECK(k[0] == doctest::Approx(1.0));  // it gained units: nothing learned of it
  CHECK(k[1] == doctest::Approx(1.25).epsilon(0.01));
  // With the correction the model predicts the machine, and its balanced split is the truth's.
  const std::vector<double> corrected = corrected_speeds(measured, k);
  CHECK(predicted_step_ms(even, corrected, c) == doctest::Approx(predicted_step_ms(even, truth, c)).epsilon(0.01));
  CHECK(balanced_partition(even, corrected, c) == balanced_partition(even, truth, c));

  SUBCASE("a move that saved what the model said teaches nothing") {
    std::vector<double> same =
        learn_correction(even, guess, measured, c, {1.0, 1.0},
                         predicted_step_ms(even, measured, c) - predicted_step_ms(guess, measured, c));
    CHECK(same == std::vector<double>{1.0, 1.0});
  }
  SUBCASE("a move that saved nothing makes the sources look as fast as makes it neutral; one that lost, no faster") {
    std::vector<double> neutral = {1.0, 1.0}, lost = {1.0, 1.0};
    for (int trial = 0; trial < 40; ++trial) {
      neutral = learn_correction(even, guess, measured, c, neutral, 0.0);
      lost = learn_correction(even, guess, measured, c, lost, -50.0);
    }
    CHECK(neutral[1] < 1.0);
    CHECK(neutral[1] > 0.25);  // not the limit: the reverse imbalance is never learned
    const std::vector<double> s = corrected_speeds(measured, neutral);
    CHECK(predicted_step_ms(even, s, c) - predicted_step_ms(guess, s, c) == doctest::Approx(0.0).epsilon(0.01));
    CHECK(lost == neutral);
  }
}

TEST_CASE("trials: a move waits for solid_before steps at the level of the last one; a resize for one") {
  Trials t;
  feed(t, 2, 100);  // the first step is never measured: one step recorded
  CHECK(t.may_start());
  CHECK_FALSE(t.may_move());
  feed(t, 2, 100);
  CHECK(t.may_move());  // three steps at 100 ms
  // A slowdown: the steps before it are not the level the move would be judged against.
  feed(t, 1, 200);
  CHECK(t.may_start());
  CHECK_FALSE(t.may_move());
  feed(t, 2, 210);
  CHECK(t.may_move());
  t.start(Change::move, 0.3, "even", "2:1");
  CHECK(t.before_ms() == doctest::Approx(210));  // the median of its level: 200, 210 and 210 ms
}

TEST_CASE("trials: a resize is kept only when its measured gain is the predicted one, beyond the speeds' noise") {
  // The step before the resize was a spike (200 ms against 100): the steps after it are 40%
  // faster whatever the resize did. Planted bug that fails this: Trials::pays keeping a resize on
  // its measured gain alone, as a move is kept (the "predicted -0.0%" keeps of issue 44).
  auto judged = [](double predicted, double noise, double after_ms) {
    Trials t;
    feed(t, 5, 100);
    feed(t, 1, 200);
    t.set_noise(noise);
    t.start(Change::resize, predicted, "even", "even resized");
    std::string verdict = feed(t, static_cast<int>(window(t.options())), after_ms);
    return verdict + ": " + t.why();
  };
  CHECK(judged(0.4, 0.05, 120) == "kept: as predicted, within 20.0% (the speeds' noise 5.0%)");
  // Nothing predicted (the spike had passed when the resize was decided): the gain is not the resize's.
  CHECK(judged(0.0, 0.05, 120) == "undone: not the predicted gain, beyond 5.0% (the speeds' noise 5.0%)");
  // Predicted 10%, measured 40%: more than the resize can explain.
  CHECK(judged(0.1, 0.05, 120).rfind("undone: not the predicted gain", 0) == 0);
  // A prediction within the noise cannot be told from it.
  CHECK(judged(0.4, 0.5, 120).rfind("undone: not the predicted gain", 0) == 0);
  // Not faster at all.
  CHECK(judged(0.4, 0.05, 200) == "undone: the steps were not +2.0% faster");
}

TEST_CASE("trials: a resize its policy ends before the verdict is inconclusive, says why, and backs off") {
  // Planted bug that fails this: cancel() ending the trial with no verdict and no backoff (103 of
  // 111 tries on a loaded machine ended without a line, and the next spike tried again at once).
  Trials t;
  feed(t, 5, 100);
  CHECK_FALSE(t.cancel());  // none under way
  t.start(Change::resize, 0.4, "even", "even resized");
  feed(t, 2, 90);
  CHECK(t.cancel());
  CHECK(t.inconclusive());
  CHECK(t.why() == "resizing ended after 2 step(s), before it was measured: the slowdown passed too soon for resizing "
                   "to pay");
  CHECK(t.failures() == 1);
  CHECK(t.backoff_left() == t.options().backoff_first);
  CHECK_FALSE(t.may_start());
}
