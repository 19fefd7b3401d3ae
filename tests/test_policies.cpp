// Each balancing policy's decide() on hand-made observations: speeds injected, no clocks, no
// model, no communicator (tests/test_balancer.cpp drives the whole Balancer). Two ranks of a
// tiny GPT's units, evenly split; rank 0 is the straggler when there is one.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <limits>

#include "core/error.h"
#include "nn/unit_costs.h"
#include "nn/units.h"
#include "parallel/balance/noise_gate.h"
#include "parallel/balance/policies/hybrid.h"
#include "parallel/balance/policies/probe_schedule.h"
#include "parallel/balance/policy.h"
#include "tests/balancing_gpt.h"
#include "tests/unit_cost_groups.h"

using namespace flextp;
using test::balancing_gpt;

namespace {

// One row per rank; `skipping`: the ranks skipped units in the step measured.
std::vector<RankRow> table(bool skipping) {
  RankRow row;
  row.units.held = {{UnitKind::Head, 4}, {UnitKind::Mlp, 4}, {UnitKind::Vocab, 1}};
  row.units.skipped = skipping ? 2 : 0;
  return {row, row};
}

// What a policy sees, built by hand; the parts an Observation refers to live here.
struct Seen {
  ModelCosts costs = gpt_model_costs(balancing_gpt(), {2, 8, 2});
  Partition partition = Partition::even(costs.groups, 2);
  CommCostModel comm;
  Resizer importance{ResizeOptions{}};
  std::vector<RankRow> rows = table(false);
  double share = 0.25;      // what the skipped_share collective answers
  int share_calls = 0;      // and how often it was asked

  double base = rank_work(partition, costs)[0] / 10.0;  // work per ms that takes an even share 10 ms

  Seen() { comm.fits["p2p"] = {0.0, 0.0}; }  // moving is free: only the settling cost counts

  // Speeds in units of base; the fast speeds are the smoothed ones unless given.
  Observation at(std::vector<double> speeds, int64_t step = 20, int rank = 0, int64_t since_move = 20,
                 std::vector<double> fast = {}) {
    if (fast.empty()) fast = speeds;
    for (double& x : speeds) x *= base;
    for (double& x : fast) x *= base;
    Observation o(rows, partition, costs, comm, importance);
    o.step = step;
    o.rank = rank;
    o.speeds = speeds;
    o.fast_speeds = fast;
    o.since_move = since_move;
    o.skipped_share = [this](const std::vector<double>&) { return ++share_calls, share; };
    return o;
  }
};

std::unique_ptr<BalancePolicy> policy(const std::string& name, double lambda = 100) {
  BalanceOptions o;
  o.policy = name;
  o.lambda = lambda;
  return make_policy(o);
}

// The actions of n decisions on the same observation, space-separated.
std::string decide_n(BalancePolicy& p, const Observation& o, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += (out.empty() ? "" : " ") + std::string(action_name(p.decide(o).action));
  return out;
}

}  // namespace

TEST_CASE("the policy registry: --balance names a registered policy; an unknown name lists them all") {
  // The shipped policies are there (a new one needs no edit here), and each name makes one.
  const std::vector<std::string> names = policy_names();
  for (const std::string shipped : {"none", "migrate", "resize", "hybrid", "proportional"}) {
    INFO(shipped);
    CHECK(std::find(names.begin(), names.end(), shipped) != names.end());
    bool resizes = shipped == "resize" || shipped == "hybrid";
    CHECK(policy(shipped)->uses_importance() == resizes);
  }
  std::string all;
  for (const std::string& name : names) {
    CHECK(policy(name) != nullptr);
    all += (all.empty() ? "" : ", ") + name;
  }
  const std::string listed = "no balancing policy is called 'shrink'; the registered ones are " + all;
  CHECK_THROWS_WITH_AS(policy("shrink"), doctest::Contains(listed.c_str()), Error);
}

TEST_CASE("none keeps the partition at any speeds and says what the step costs") {
  Seen s;
  Decision d = policy("none")->decide(s.at({0.5, 1}));
  CHECK(d.action == Action::keep);
  CHECK(d.plan.target == s.partition);
  CHECK(d.plan.now_ms == predicted_step_ms(s.partition, {0.5 * s.base, s.base}, s.costs));
  CHECK(d.plan.ideal_ms == ideal_step_ms(s.partition, {0.5 * s.base, s.base}, s.costs));
  CHECK(d.keep.empty());
}

TEST_CASE("migrate moves a settled 2x straggler's surplus to the fast rank, and nothing for noise") {
  Seen s;
  auto migrate = policy("migrate");
  CHECK(migrate->decide(s.at({1, 1})).action == Action::keep);
  CHECK(migrate->decide(s.at({0.95, 1})).action == Action::keep);                  // under the least gain
  CHECK(migrate->decide(s.at({0.5, 1}, 20, 0, /*since_move=*/0)).action == Action::keep);  // settling
  Decision d = migrate->decide(s.at({0.5, 1}));
  CHECK(d.action == Action::migrate);
  CHECK(d.plan.migrate);
  CHECK(d.plan.target == balanced_partition(s.partition, {0.5, 1}, s.costs));
  CHECK(d.plan.after_ms < d.plan.now_ms);
}

TEST_CASE("resize: a 2x straggler keeps half of each resizable group on the last step's speeds; the fast rank all") {
  Seen s;
  auto resize = policy("resize");
  // The smoothed speeds have not seen the slowdown yet; the last step's have.
  Decision slow = resize->decide(s.at({1, 1}, 20, 0, 20, {0.5, 1}));
  CHECK(slow.action == Action::resize);
  CHECK(slow.keep == std::map<std::string, int64_t>{{"h.0.head", 2}, {"h.0.mlp", 2}});  // of 4 each; vocab never
  CHECK(skipped_here(s.at({1, 1}), slow) == 4);
  // The plan the log shows is on the smoothed speeds.
  CHECK(slow.plan.now_ms == predicted_step_ms(s.partition, {s.base, s.base}, s.costs));
  CHECK(resize->decide(s.at({1, 1}, 20, /*rank=*/1, 20, {0.5, 1})).action == Action::keep);
  CHECK(resize->decide(s.at({1, 1}, 20, 0, 20, {0.85, 1})).action == Action::keep);  // inside the dead band
  CHECK(resize->decide(s.at({1, 1}, 20, 0, 20, {0.7, 1})).action == Action::resize);  // beyond it
}

TEST_CASE("resizing skips the groups the unit registry declares resizable, whatever their names") {
  Seen s;
  const std::vector<double> slow = {0.5 * s.base, s.base};
  CHECK(resized_step_ms(s.at({1, 1}), slow) < predicted_step_ms(s.partition, slow, s.costs));
  // The heads declared fixed and the vocabulary resizable; the names stay as they were.
  for (UnitGroup& g : s.costs.groups) g.resizable = g.kind != UnitKind::Head;
  Decision d = policy("resize")->decide(s.at({1, 1}, 20, 0, 20, {0.5, 1}));
  CHECK(d.action == Action::resize);
  CHECK(d.keep == std::map<std::string, int64_t>{{"h.0.mlp", 2}, {"vocab", 0}});  // of 4 and of 1
  // Nothing resizable: the hybrid's resized step is the step as it is.
  for (UnitGroup& g : s.costs.groups) g.resizable = false;
  CHECK(resized_step_ms(s.at({1, 1}), slow) == predicted_step_ms(s.partition, slow, s.costs));
  CHECK(resize_to(s.at({1, 1}), slow).keep.empty());
}

TEST_CASE("the probe schedule: a probe after 2, 4, 8, 16, then every 32 resized steps; a new episode starts at 2") {
  ProbeSchedule probes(2, 32);
  // The step after a probe ran every unit; the others skipped.
  auto gaps = [&](int probes_wanted) {
    std::vector<int> out;
    bool skipping = true;
    for (int resized = 0; static_cast<int>(out.size()) < probes_wanted;) {
      resized += skipping;
      skipping = !probes.due(table(skipping));
      if (!skipping) out.push_back(resized), resized = 0;
    }
    return out;
  };
  CHECK(gaps(7) == std::vector<int>{2, 4, 8, 16, 32, 32, 32});
  CHECK_FALSE(probes.due(table(false)));  // back to speed: the episode ends
  CHECK_FALSE(probes.due(table(false)));
  CHECK(gaps(2) == std::vector<int>{2, 4});
  ProbeSchedule never(0, 32);
  for (int i = 0; i < 100; ++i) CHECK_FALSE(never.due(table(true)));
}

TEST_CASE("hybrid: lambda prices skipped importance against a migration's cost over the slowdown's rest") {
  Seen s;
  SUBCASE("balanced ranks keep, and the collective is not asked") {
    CHECK(decide_n(*policy("hybrid"), s.at({1, 1}), 5) == "keep keep keep keep keep");
    CHECK(s.share_calls == 0);
  }
  SUBCASE("lambda 0 resizes at once and never migrates") {
    auto hybrid = policy("hybrid", 0);
    Decision d = hybrid->decide(s.at({1, 1}, 20, 0, 20, {0.5, 1}));
    CHECK(d.action == Action::resize);
    CHECK(d.keep == std::map<std::string, int64_t>{{"h.0.head", 2}, {"h.0.mlp", 2}});
    CHECK(s.share_calls == 1);
    CHECK(decide_n(*hybrid, s.at({0.5, 1}, 20, 0, 20, {0.5, 1}), 60).find("migrate") == std::string::npos);
  }
  SUBCASE("lambda inf keeps a fresh slowdown, migrates once it has lasted, never resizes") {
    auto hybrid = policy("hybrid", std::numeric_limits<double>::infinity());
    std::string actions = decide_n(*hybrid, s.at({0.5, 1}), 40);
    INFO(actions);
    CHECK(actions.rfind("keep keep", 0) == 0);
    CHECK(actions.find("migrate") != std::string::npos);
    CHECK(actions.find("resize") == std::string::npos);
    CHECK(decide_n(*policy("hybrid", std::numeric_limits<double>::infinity()), s.at({0.5, 1}, 20, 0, 0), 60)
              .find("migrate") == std::string::npos);  // not while the last move settles
  }
  SUBCASE("a rank slow only in its last steps (time slices), not on average, is not migrated") {
    // Smoothed speeds balanced, the last step's bursty: a move planned on the last step would
    // be undone by the next.
    std::string actions = decide_n(*policy("hybrid", std::numeric_limits<double>::infinity()),
                                   s.at({1, 1}, 20, 0, 20, {0.5, 1}), 40);
    INFO(actions);
    CHECK(actions.find("migrate") == std::string::npos);
  }
  SUBCASE("a middle lambda resizes a fresh slowdown and migrates a lasting one") {
    auto hybrid = policy("hybrid", 16);
    std::string actions = decide_n(*hybrid, s.at({0.5, 1}), 40);
    INFO(actions);
    CHECK(actions.rfind("resize", 0) == 0);
    CHECK(actions.find("migrate") != std::string::npos);
  }
  SUBCASE("an episode of resizing that outlasts a move's price is migrated, though resizing is faster") {
    // Resized 15.8 ms, migrated 17.9 ms plus a 40 ms move, 5 x 0.25 = 1.25 ms of accuracy per
    // step at the start: at a flat price resizing would win for ever; its growth ends it.
    std::string actions = decide_n(*policy("hybrid", 5), s.at({0.5, 1}), 60);
    INFO(actions);
    CHECK(actions.rfind("resize resize resize resize resize", 0) == 0);
    CHECK(actions.find("migrate") != std::string::npos);
  }
  SUBCASE("once its price passes keeping, a resizing episode that cannot migrate keeps, and does not restart") {
    // No move possible (the last one still settling): resized 15.8 ms against keeping 20 ms, at
    // 10 x 0.25 = 2.5 ms a step at first; past ~22 steps the price makes keeping cheaper. A kept
    // step while the slowdown lasts does not reset the price, so resizing does not start again.
    std::string actions = decide_n(*policy("hybrid", 10), s.at({0.5, 1}, 20, 0, 0), 60);
    INFO(actions);
    CHECK(actions.rfind("resize resize resize resize resize", 0) == 0);
    const size_t kept = actions.find("keep");
    REQUIRE(kept != std::string::npos);
    CHECK(actions.find("resize", kept) == std::string::npos);
    CHECK(actions.find("migrate") == std::string::npos);
  }
  SUBCASE("a second slowdown after balanced steps is priced afresh: it decides exactly like the first") {
    // No move possible (the last one still settling), as above: the first episode resizes until
    // its price passes keeping, then keeps. Balanced steps end the episode; the second episode,
    // the same slowdown, starts again at the first resized step's price. The table says whether
    // the last step skipped units, as the monitor's would (the probes follow it).
    auto hybrid = policy("hybrid", 10);
    bool skipped = false;
    auto run = [&](std::vector<double> speeds, int steps) {
      std::string out;
      for (int i = 0; i < steps; ++i) {
        s.rows = table(skipped);
        Action a = hybrid->decide(s.at(speeds, 20, 0, 0)).action;
        skipped = a == Action::resize;
        out += (out.empty() ? "" : " ") + std::string(action_name(a));
      }
      return out;
    };
    const std::string first = run({0.5, 1}, 40);
    INFO("first: ", first);
    REQUIRE(first.rfind("resize resize", 0) == 0);
    REQUIRE(first.find("keep") != std::string::npos);  // the price passed keeping within the episode
    CHECK(run({1, 1}, 8) == "keep keep keep keep keep keep keep keep");
    CHECK(run({0.5, 1}, 40) == first);
    CHECK(run({1, 1}, 3) == "keep keep keep");
    CHECK(run({0.5, 1}, 40) == first);  // and a third
  }
  SUBCASE("a rank slow from the first step is never clear of its noise: migrated, not resized") {
    // Measured times whose speeds never change: the noise gate's baseline holds the slowness.
    for (RankRow& r : s.rows) r.work = 100, r.compute_ms = 100;
    s.rows[0].compute_ms = 200;
    s.share = 0.001;  // skipping would cost almost nothing: resizing is the cheapest choice
    std::string actions = decide_n(*policy("hybrid"), s.at({0.5, 1}), 40);
    INFO(actions);
    CHECK(actions.find("resize") == std::string::npos);
    CHECK(actions.find("migrate") != std::string::npos);
  }
  SUBCASE("it probes on the resizing schedule") {
    auto hybrid = policy("hybrid", 0);
    s.rows = table(true);
    CHECK(decide_n(*hybrid, s.at({0.5, 1}), 2) == "resize probe");
  }
}

TEST_CASE("the noise gate: a slowdown is clear beyond max(4 x the rank's MAD, 30%), at most 45%, below its quiet median") {
  const NoiseGateOptions o;
  CHECK_FALSE(clear_slowdown(0.1, {1, 1, 1}, o));  // three steps tell nothing of the noise
  // A few steps: more than 40% below.
  CHECK(clear_slowdown(0.59, {1, 1, 1, 1}, o));
  CHECK_FALSE(clear_slowdown(0.61, {1, 1, 1, 1}, o));
  // 16 steps without noise: the 30% floor.
  const std::vector<double> still(16, 1.0);
  CHECK(clear_slowdown(0.69, still, o));
  CHECK_FALSE(clear_slowdown(0.71, still, o));
  // 16 steps of +-10%: median 1, MAD 0.1, so 40% below.
  std::vector<double> noisy;
  for (int i = 0; i < 8; ++i) noisy.push_back(0.9), noisy.push_back(1.1);
  CHECK(clear_slowdown(0.59, noisy, o));
  CHECK_FALSE(clear_slowdown(0.61, noisy, o));
  // No noise hides a drop of more than 45%: +-50% is MAD 0.5.
  std::vector<double> wild;
  for (int i = 0; i < 8; ++i) wild.push_back(0.5), wild.push_back(1.5);
  CHECK(clear_slowdown(0.54, wild, o));
  CHECK_FALSE(clear_slowdown(0.56, wild, o));
  // The baseline is the median, not the mean: one slow spike in the window moves nothing.
  std::vector<double> spiked = still;
  spiked[3] = 0.1;
  CHECK(clear_slowdown(0.69, spiked, o));
}

TEST_CASE("the noise gate learns from steps where every unit ran; injected speeds without times pass") {
  NoiseGate gate;
  auto measured = [](double speed0, bool skipping) {
    std::vector<RankRow> rows = table(skipping);
    for (RankRow& r : rows) r.work = 100, r.compute_ms = 100;
    rows[0].compute_ms = 100 / speed0;
    return rows;
  };
  CHECK(gate.observe(table(false)));  // no times: nothing to judge by
  for (int i = 0; i < 3; ++i) CHECK_FALSE(gate.observe(measured(1, false)));
  CHECK_FALSE(gate.observe(measured(1, true)));    // a step that skipped units is not learnt from...
  CHECK_FALSE(gate.observe(measured(0.5, false)));  // ...so three quiet steps are too few to judge
  CHECK(gate.observe(measured(0.5, false)));        // four (one slow): a 2x drop is clear
  CHECK(gate.observe(measured(0.5, true)));         // and judged while skipping too
}

TEST_CASE("the noise gate: a drop within the ceiling is clear on its second step in a row, beyond it at once") {
  auto measured = [](double speed0) {
    std::vector<RankRow> rows = table(false);
    for (RankRow& r : rows) r.work = 100, r.compute_ms = 100;
    rows[0].compute_ms = 100 / speed0;
    return rows;
  };
  NoiseGate gate;
  for (int i = 0; i < 20; ++i) CHECK_FALSE(gate.observe(measured(1)));  // no noise: the 30% floor
  CHECK_FALSE(gate.observe(measured(0.65)));  // 35% down for one step: a shared machine's jitter
  CHECK_FALSE(gate.observe(measured(1)));
  CHECK_FALSE(gate.observe(measured(0.65)));  // again one step alone
  CHECK(gate.observe(measured(0.65)));        // the second in a row: clear
  NoiseGate fresh;
  for (int i = 0; i < 20; ++i) fresh.observe(measured(1));
  CHECK(fresh.observe(measured(0.5)));  // 50% down, beyond the 45% ceiling: clear at once
}

TEST_CASE("the noise gate past its window: the baseline is the last 32 steps' median, older ones forgotten") {
  auto measured = [](double speed0) {
    std::vector<RankRow> rows = table(false);
    for (RankRow& r : rows) r.work = 100, r.compute_ms = 100;
    rows[0].compute_ms = 100 / speed0;
    return rows;
  };
  NoiseGate gate;
  REQUIRE(NoiseGateOptions{}.window == 32);
  for (int i = 0; i < 100; ++i) gate.observe(measured(1));    // three windows' worth at speed 1
  for (int i = 0; i < 16; ++i) gate.observe(measured(0.5));  // a lasting change: slow steps join too
  // The window: 16 steps at 1 and 16 at 0.5, median 0.75, noise past the 45% ceiling: 0.4 is
  // clear (below 0.4125). With 31 steps kept (15 at 1) the baseline would be 0.5 and 0.4 within
  // its 30% floor.
  CHECK(gate.observe(measured(0.4)));
  for (int i = 0; i < 32; ++i) gate.observe(measured(0.5));
  // 32 steps at 0.5 fill the window: 0.5 is the baseline now, not a slowdown (the 100 steps at 1
  // count no more), and a further halving is clear at once.
  CHECK_FALSE(gate.observe(measured(0.5)));
  CHECK_FALSE(gate.observe(measured(0.5)));
  CHECK(gate.observe(measured(0.25)));
}

TEST_CASE("proportional: after the warm-up one move in proportion to the speeds, then that split for good") {
  Seen s;
  auto proportional = policy("proportional");
  for (int64_t step = 1; step < 10; ++step) CHECK(proportional->decide(s.at({0.5, 1}, step)).action == Action::keep);
  Decision d = proportional->decide(s.at({0.5, 1}, 10));
  CHECK(d.action == Action::migrate);
  CHECK(d.plan.target == balanced_partition(s.partition, {0.5, 1}, s.costs));
  CHECK(proportional->decide(s.at({0.5, 1}, 11)).action == Action::keep);
  CHECK(proportional->decide(s.at({0.25, 1}, 50)).action == Action::keep);  // once only

  auto balanced = policy("proportional");
  CHECK(balanced->decide(s.at({1, 1}, 10)).action == Action::keep);  // nothing to move
}

TEST_CASE("docs/policies.md shows the shipped example policy, whole") {
  auto text = [](const std::string& path) {
    std::ifstream in(FLEXTP_SOURCE_DIR "/" + path);
    REQUIRE(in);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  std::string doc = text("docs/policies.md"), example = text("parallel/balance/policies/proportional.cpp");
  CHECK(doc.find("# Writing a balancing policy") != std::string::npos);
  CHECK(doc.find("```cpp\n" + example + "```\n") != std::string::npos);
  CHECK(text("parallel/balance/policies/registered.h").find("\nFLEXTP_POLICY(proportional)\n") != std::string::npos);
}

