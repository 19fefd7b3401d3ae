// The balancer's decisions, driven by injected speeds instead of clocks. This process is rank 0
// of two, the straggler when there is one; the communicator plays rank 1 at full speed: it
// reports the work the balancer's partition gives it and skips nothing, as a fast rank would (so
// rank 1 is never the slow one here). Every policy: equal speeds keep the partition; none only
// measures; migrate moves units off a lasting straggler and absorbs a blip; resize skips units
// and probes on schedule; hybrid picks between them by lambda.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <memory>
#include <random>

#include "nn/gpt.h"
#include "nn/unit_costs.h"
#include "nn/units.h"
#include "parallel/balance/active_units.h"
#include "parallel/balance/balancer.h"
#include "tests/balancing_gpt.h"

using namespace flextp;
using test::balancing_gpt;

namespace {

// Rank 0 of speed.size() ranks; the others are played from the balancer's partition.
class PlayedRanks : public Communicator {
 public:
  std::vector<double> speed;  // work per ms of every rank in the step being recorded
  const Balancer* balancer = nullptr;

  int rank() const override { return 0; }
  int size() const override { return static_cast<int>(speed.size()); }
  const char* backend() const override { return "played"; }
  void all_reduce(Tensor&, ReduceOp) override {}  // totals of this rank alone
  void broadcast(Tensor&, int) override {}
  // The hybrid's one number: the share of importance a rank skips (none on the others).
  void all_gather(const Tensor& in, Tensor& out) override {
    std::vector<double> all = in.to_vector<double>();
    all.resize(static_cast<size_t>(size()), 0.0);
    out.copy_from(Tensor::from_vector(all, out.shape()));
  }
  void reduce_scatter(const Tensor&, Tensor&) override { FAIL("not played"); }
  // The test reads decisions, not weights: units arrive as ones.
  void send_recv(const std::vector<Transfer>&, const std::vector<Transfer>& recvs) override {
    for (Transfer r : recvs) r.buffer.fill_(1.0);
  }
  void all_to_all_v(const Tensor&, const std::vector<int64_t>&, Tensor& recv, const std::vector<int64_t>&) override {
    recv.fill_(1.0);
  }
  void barrier() override {}
};

void append(std::string& choices, const std::string& choice) { choices += (choices.empty() ? "" : " ") + choice; }
// The closed loop's events of the steps, space-separated (steps without one add nothing).
void append_event(std::string& events, const std::string& event) {
  if (!event.empty()) append(events, event);
}

// A balancer on rank 0 of an even split of a tiny GPT's units.
struct DrivenBalancer {
  PlayedRanks comm;
  Partition initial;
  std::unique_ptr<GPT> model;
  std::vector<Parameter*> params;
  std::unique_ptr<Balancer> balancer;
  double base = 0;  // work per ms that makes rank 0's even share take 10 ms
  int64_t steps = 0;

  // replicas: the run's data-parallel replicas (>1: the links are judged by observe_replicas).
  DrivenBalancer(const std::string& policy, double lambda = 100, std::unique_ptr<BalancePolicy> own = nullptr,
                 double min_gain = 0.1, bool closed_loop = true, int replicas = 1)
      : initial(Partition::even(unit_groups(balancing_gpt()), 2)) {
    comm.speed = {1, 1};
    model = std::make_unique<GPT>(balancing_gpt(), LocalUnits::of_rank(balancing_gpt(), initial, 0), &comm);
    params = model->parameters();
    BalanceOptions o;
    o.policy = policy;
    o.lambda = lambda;
    o.resize.priority = "norm";  // importance from the weights alone: no gradients needed
    o.planner.min_gain = min_gain;
    o.trials.enabled = closed_loop;
    o.replicas = replicas;
    CommCostModel free;
    free.fits["p2p"] = {0.0, 0.0};
    if (!own) own = make_policy(o);
    balancer = std::make_unique<Balancer>(comm, gpt_model_costs(balancing_gpt(), {2, 8, 2}), initial, free, o,
                                          std::move(own));
    comm.balancer = balancer.get();
    base = balancer->work_of(0) / 10.0;
  }
  // One step with rank 0 at this speed (1: rank 1's, its even share in 10 ms); what was chosen.
  // wait0: ms rank 0 waits in the step's collectives beyond its compute (a step made longer).
  BalanceStep step(double speed0, double speed1 = 1, double wait0 = 0) {
    comm.speed = {speed0 * base, speed1 * base};
    balancer->observe_gradients(params, steps++);
    std::vector<RankReport> reports{balancer->report(balancer->work_of(0) / comm.speed[0], wait0)};
    for (int r = 1; r < comm.size(); ++r) {
      const double work = balancer->work_of(r);
      reports.push_back({work / comm.speed[r], 0.0, work, balancer->unit_counts(r)});
    }
    return balancer->after_step(steps, reports, params, {"m", "v"});
  }
  // The choices of n steps at this speed, space-separated.
  std::string steps_at(int n, double speed0) {
    std::string out;
    for (int i = 0; i < n; ++i) append(out, step(speed0).choice);
    return out;
  }
  // Units of rank 0 that do not run now, read from its parameters.
  int64_t skipped() const {
    int64_t n = 0;
    for (const auto& [group, owners] : balancer->partition().groups()) {
      std::vector<Parameter*> ps = group_parameters(params, group);
      if (!ps.empty()) n += static_cast<int64_t>(ps.front()->units.size()) - ps.front()->active_units();
    }
    return n;
  }
  bool moved() const { return !(balancer->partition() == initial); }
};

// `choice` n times, space-separated.
std::string times(int n, const std::string& choice) {
  std::string out;
  for (int i = 0; i < n; ++i) append(out, choice);
  return out;
}
int count_choices(const std::string& choices) {
  return choices.empty() ? 0 : static_cast<int>(std::count(choices.begin(), choices.end(), ' ')) + 1;
}

// Once a migration is chosen, nothing but keep follows.
bool migrates_once_then_keeps(const std::string& choices) {
  size_t at = choices.find("migrate");
  if (at == std::string::npos) return false;
  std::string rest = choices.substr(at);
  return rest == "migrate " + times(count_choices(rest) - 1, "keep");
}

// Resizing from the first slow step, a probe after 2, 4, 8, 16 and then every 32 resized steps.
std::string resize_and_probes() {
  std::string out = "resize";
  for (int gap : {2, 4, 8, 16, 32, 32}) out += " " + times(gap - 1, "resize") + " probe resize";
  return out;
}

}  // namespace

TEST_CASE("equal speeds, up to a shared machine's noise: no policy moves or skips a unit") {
  for (const std::string policy : {"none", "migrate", "resize", "hybrid"}) {
    INFO(policy);
    DrivenBalancer d(policy);
    std::string choices;
    for (double speed : {1.0, 0.95, 1.04, 0.96, 1.0, 0.95, 0.95, 1.05, 0.97, 0.95, 0.95, 0.95})
      append(choices, d.step(speed).choice);
    CHECK(choices == times(12, "keep"));
    CHECK_FALSE(d.moved());
    CHECK(d.skipped() == 0);
  }
}

TEST_CASE("none measures a straggler and does nothing about it") {
  DrivenBalancer d("none");
  CHECK(d.steps_at(20, 0.5) == times(20, "keep"));
  CHECK_FALSE(d.moved());
  CHECK(d.skipped() == 0);
  CHECK(d.balancer->monitor().speeds()[0] == doctest::Approx(0.5 * d.base));
  CHECK(d.balancer->monitor().speeds()[1] == doctest::Approx(d.base));
}

TEST_CASE("migrate: a lasting 2x straggler gives units to the fast rank once; a blip moves nothing") {
  DrivenBalancer d("migrate");
  d.steps_at(4, 1);
  // The first slow step is one sample off the average; the second confirms it; the move waits
  // for a third slow step, so that the closed loop has 3 steps at the new level to judge it by.
  CHECK(d.steps_at(20, 0.5) == "keep keep keep migrate " + times(16, "keep"));
  for (const char* group : {"h.0.head", "h.0.mlp"}) {
    INFO(group);
    CHECK(d.balancer->partition().units_of(group, 0).size() < d.initial.units_of(group, 0).size());
  }
  CHECK(d.balancer->partition() == balanced_partition(d.initial, {0.5, 1.0}, gpt_model_costs(balancing_gpt(), {2, 8, 2})));
  CHECK(d.skipped() == 0);

  DrivenBalancer blip("migrate");
  CHECK(blip.steps_at(6, 1) + " | " + blip.steps_at(1, 0.5) + " | " + blip.steps_at(10, 1) ==
        times(6, "keep") + " | keep | " + times(10, "keep"));
  CHECK_FALSE(blip.moved());
}

TEST_CASE("resize: a 2x straggler skips half its units from the next step, probing on schedule; nothing moves") {
  DrivenBalancer d("resize");
  d.steps_at(4, 1);
  std::string expected = resize_and_probes();
  CHECK(d.steps_at(count_choices(expected), 0.5) == expected);
  CHECK(d.skipped() == 4);  // 2 of its 4 heads and 2 of its 4 MLP blocks: it runs at half speed
  CHECK(d.balancer->unit_counts(0).skipped == 4);  // and the monitor is told so
  CHECK_FALSE(d.moved());
  // Back to speed: every unit returns at once.
  CHECK(d.steps_at(3, 1) == times(3, "keep"));
  CHECK(d.skipped() == 0);

  DrivenBalancer blip("resize");
  CHECK(blip.steps_at(6, 1) + " | " + blip.steps_at(1, 0.5) + " | " + blip.steps_at(10, 1) ==
        times(6, "keep") + " | resize | " + times(10, "keep"));
  CHECK(blip.skipped() == 0);
  CHECK_FALSE(blip.moved());
}

TEST_CASE("hybrid: lambda chooses between skipping work and moving weights") {
  SUBCASE("lambda 0 never moves weights: it resizes and probes as resize does") {
    DrivenBalancer d("hybrid", 0);
    d.steps_at(4, 1);
    std::string expected = resize_and_probes();
    CHECK(d.steps_at(count_choices(expected), 0.5) == expected);
    CHECK_FALSE(d.moved());
  }
  SUBCASE("lambda inf never drops work: it keeps until migrating pays, then migrates once") {
    DrivenBalancer d("hybrid", std::numeric_limits<double>::infinity());
    d.steps_at(4, 1);
    std::string choices = d.steps_at(40, 0.5);
    INFO("choices: ", choices);
    CHECK(choices.find("resize") == std::string::npos);
    CHECK(choices.find("probe") == std::string::npos);
    CHECK(choices.rfind("keep keep", 0) == 0);  // a fresh slowdown may end soon: not yet
    CHECK(migrates_once_then_keeps(choices));
    CHECK(d.moved());
    CHECK(d.skipped() == 0);
  }
  SUBCASE("a middle lambda resizes a fresh slowdown, migrates a lasting one, then runs every unit") {
    // 16 ms per step of fully skipped model: at these costs skipping beats a slow step at once,
    // and moving beats skipping once the slowdown has lasted some 25 steps.
    DrivenBalancer d("hybrid", 16);
    d.steps_at(4, 1);
    std::string choices;
    for (int i = 0; i < 40; ++i) {
      std::string choice = d.step(0.5).choice;
      if (choice == "migrate") CHECK(d.skipped() == 0);  // units travel whole and all run again
      append(choices, choice);
    }
    INFO("choices: ", choices);
    CHECK(choices.rfind("resize resize probe", 0) == 0);
    CHECK(migrates_once_then_keeps(choices));
    CHECK(d.moved());
    CHECK(d.skipped() == 0);
  }
  SUBCASE("a blip is resized for one step where skipping is cheap, kept where it is dear, never migrated") {
    for (const auto& lambda_choice : std::vector<std::pair<double, std::string>>{
             {0.0, "resize"}, {16.0, "resize"}, {100.0, "keep"}}) {
      INFO("lambda ", lambda_choice.first);
      DrivenBalancer d("hybrid", lambda_choice.first);
      CHECK(d.steps_at(6, 1) == times(6, "keep"));
      CHECK(d.steps_at(1, 0.5) == lambda_choice.second);
      CHECK(d.steps_at(10, 1) == times(10, "keep"));
      CHECK(d.skipped() == 0);
      CHECK_FALSE(d.moved());
    }
  }
}

TEST_CASE("hybrid: a quiet machine's jitter of +-25% on both ranks resizes no step; a 2x slowdown within 2 steps") {
  for (double lambda : {0.0, 16.0, 100.0}) {
    INFO("lambda ", lambda);
    DrivenBalancer d("hybrid", lambda);
    std::mt19937 seeded(17);
    std::uniform_real_distribution<double> jitter(0.75, 1.25);
    // Draws in a fixed order: the order in which a call's arguments are evaluated differs between
    // compilers (GCC right to left, clang left to right), and so would the sequence.
    auto step = [&](bool rank0_slowed) {
      double rank0 = rank0_slowed ? 0.5 : jitter(seeded);
      double rank1 = jitter(seeded);
      return d.step(rank0, rank1).choice;
    };
    std::string choices;
    for (int i = 0; i < 200; ++i) append(choices, step(false));
    INFO("choices: ", choices);
    CHECK(choices.find("resize") == std::string::npos);
    CHECK(choices.find("probe") == std::string::npos);
    CHECK(d.skipped() == 0);
    if (lambda == 100.0) continue;  // at this tiny model's costs skipping is dearer than a slow step
    // Rank 0 slows to half its quiet median (rank 1 as jittery as before): resized from the first
    // or second slow step.
    std::string slow = step(true);
    append(slow, step(true));
    INFO("slow: ", slow);
    CHECK(slow.find("resize") != std::string::npos);
  }
}

namespace {
// A policy of one's own that gives the replicas' windows the other way round.
class SwappedShares : public BalancePolicy {
 public:
  Decision decide(const Observation& o) override {
    Decision d = keep_at(o, o.speeds);
    d.shares.assign(o.replicas.windows.rbegin(), o.replicas.windows.rend());
    return d;
  }
};
}  // namespace

TEST_CASE("the balancing decision carries the replicas' window shares") {
  const std::vector<int64_t> even{4, 4}, by_speed{2, 6};
  for (const std::string policy : {"none", "migrate", "resize", "hybrid", "proportional"}) {
    INFO(policy);
    DrivenBalancer d(policy);
    CHECK(d.step(1).shares.empty());  // one replica: nothing to share
    d.balancer->observe_replicas({even, {1, 3}, 0, true});
    CHECK(d.step(1).shares == by_speed);
    d.balancer->observe_replicas({even, {1, 3}, 0, false});  // kept even
    CHECK(d.step(1).shares == even);
    d.balancer->observe_replicas({even, {0, 0}, 0, true});  // not measured yet
    CHECK(d.step(1).shares == even);
  }
  DrivenBalancer own("none", 100, std::make_unique<SwappedShares>());
  own.balancer->observe_replicas({by_speed, {1, 3}, 0, true});
  CHECK(own.step(1).shares == std::vector<int64_t>{6, 2});
}

// Keeps, and remembers the step of every observation it saw.
class StepsSeen : public BalancePolicy {
 public:
  std::vector<int64_t>* seen;
  explicit StepsSeen(std::vector<int64_t>* s) : seen(s) {}
  Decision decide(const Observation& o) override { return seen->push_back(o.step), keep_at(o, o.speeds); }
};

TEST_CASE("a policy's observation counts training steps: a resumed run's balancer goes on from its step") {
  std::vector<int64_t> seen;
  DrivenBalancer fresh("none", 100, std::make_unique<StepsSeen>(&seen));
  fresh.step(1), fresh.step(1);
  CHECK(seen == std::vector<int64_t>{1, 2});
  seen.clear();
  DrivenBalancer resumed("none", 100, std::make_unique<StepsSeen>(&seen));
  resumed.steps = 40;  // resumed from a checkpoint of step 40: its monitor starts empty
  resumed.step(1), resumed.step(1);
  CHECK(seen == std::vector<int64_t>{41, 42});
}

TEST_CASE("the balancer watches the links: its step result says when the group's least wait rose and stayed up") {
  DrivenBalancer d("none");
  auto at = [&](double wait) {  // a step in which both ranks compute 10 ms and wait `wait` ms
    std::vector<RankReport> reports;
    for (int r = 0; r < 2; ++r) reports.push_back({10.0, wait, d.balancer->work_of(r), d.balancer->unit_counts(r)});
    return d.balancer->after_step(++d.steps, reports, d.params, {"m", "v"});
  };
  for (int i = 0; i < 5; ++i) CHECK(at(2.0).link.event == LinkWatch::Event::None);
  const BalanceStep blip = at(80.0);
  CHECK(blip.link.comm_ms == 80.0);
  CHECK(blip.link.event == LinkWatch::Event::None);
  CHECK(blip.ranks.size() == 2);  // the monitor's table of the step
  const BalanceStep slowed = at(80.0);
  CHECK(slowed.link.event == LinkWatch::Event::Slowed);
  CHECK(slowed.link.slow);
  CHECK(slowed.link.usual_ms == doctest::Approx(2.0));
  at(2.0);
  CHECK(at(2.0).link.event == LinkWatch::Event::Recovered);
}

TEST_CASE("with replicas the balancer watches the least wait of any replica, not its own group's") {
  DrivenBalancer d("none", 100, nullptr, 0.1, true, 2);
  const ReplicaView even{{4, 4}, {1, 1}, 0, false};
  // A step in which both ranks of this replica compute 10 ms and wait `own` ms; `least`: the least
  // wait of any replica's group (WindowShares::after_step gathers it).
  auto at = [&](double own, double least) {
    std::vector<RankReport> reports;
    for (int r = 0; r < 2; ++r) reports.push_back({10.0, own, d.balancer->work_of(r), d.balancer->unit_counts(r)});
    BalanceStep s = d.balancer->after_step(++d.steps, reports, d.params, {"m", "v"});
    d.balancer->observe_replicas(even, least, s);
    return s;
  };
  for (int i = 0; i < 5; ++i) CHECK(at(2.0, 2.0).link.event == LinkWatch::Event::None);
  // This replica waits 80 ms for a slower one, in the gradient sum; the other's link takes 2 ms.
  for (int i = 0; i < 4; ++i) {
    const BalanceStep waiting = at(80.0, 2.0);
    CHECK(waiting.link.comm_ms == 2.0);
    CHECK(waiting.link.event == LinkWatch::Event::None);
    CHECK_FALSE(waiting.link.slow);
  }
  // Every replica's group waits: the link.
  CHECK(at(80.0, 80.0).link.event == LinkWatch::Event::None);
  const BalanceStep slowed = at(80.0, 80.0);
  CHECK(slowed.link.event == LinkWatch::Event::Slowed);
  CHECK(slowed.link.usual_ms == doctest::Approx(2.0));
}

TEST_CASE("closed loop: a move that pays is kept; one that makes the steps slower is undone within its window") {
  SUBCASE("kept") {
    DrivenBalancer d("migrate");
    d.steps_at(4, 1);
    std::string trials;
    for (int i = 0; i < 12; ++i) append_event(trials, d.step(0.5).trial);
    CHECK(trials == "try kept");
    CHECK(d.moved());
  }
  SUBCASE("undone, and no new try while it backs off") {
    DrivenBalancer d("migrate");
    d.steps_at(4, 1);
    std::string trials, choices;
    BalanceStep move, undo;
    for (int i = 0; i < 14; ++i) {
      BalanceStep b = d.step(0.5, 1, d.moved() ? 30.0 : 0.0);  // after the move every step is 30 ms longer
      append_event(trials, b.trial);
      append(choices, b.choice);
      if (b.choice == "migrate") move = b;
      if (b.choice == "undo") undo = b;
    }
    CHECK(trials == "try undone");
    // The third slow step makes the move (trials.h: solid_before); it is judged on the fifth step
    // after it.
    CHECK(choices == "keep keep keep migrate " + times(4, "keep") + " undo " + times(5, "keep"));
    CHECK_FALSE(d.moved());
    // The undo's log line says what it restores: the units the move gave rank 1 go back to rank 0
    // (was "migrate: 4 units, 386 KiB; step 0.0 -> 0.0 ms (ideal 0.0), ...": a plan of no step).
    REQUIRE(move.plan.units_to.size() == 2);
    CHECK(move.plan.units_to[1] == move.plan.units_moved);
    CHECK(undo.plan.units_moved == move.plan.units_moved);
    char said[256];
    std::snprintf(said, sizeof said, "undo: %lld units, %.0f KiB, back to rank 0, where they were before the try (its "
                  "steps were slower); transfer 0.0 ms", static_cast<long long>(move.plan.units_moved),
                  move.plan.bytes / 1024);
    CHECK(undo.plan.str() == said);
    CHECK(d.balancer->trials().backoff_left() > 0);
  }
  SUBCASE("a resize that does not shorten the step is undone, its units restored") {
    DrivenBalancer d("resize");
    d.steps_at(4, 1);
    std::string trials;
    std::string choices;
    for (int i = 0; i < 12; ++i) {
      BalanceStep b = d.step(0.5, 1, d.skipped() ? 20.0 : 0.0);
      append_event(trials, b.trial);
      append(choices, b.choice);
    }
    INFO(choices);
    CHECK(trials == "try undone");
    CHECK(d.skipped() == 0);
    CHECK(d.steps_at(5, 0.5) == times(5, "keep"));  // backing off: no resizing again yet
  }
}

TEST_CASE("closed loop: with no move predicted to pay but steps far above the ideal, the model's best move is tried") {
  // min_gain 0.9: the policy itself never moves; the loop tries the model's balanced split.
  DrivenBalancer d("migrate", 100, nullptr, 0.9);
  d.steps_at(4, 1);
  std::string trials;
  bool explored = false;
  for (int i = 0; i < 24; ++i) {
    BalanceStep b = d.step(0.5);
    append_event(trials, b.trial);
    explored = explored || b.explored;
  }
  CHECK(trials == "try kept");
  CHECK(explored);
  CHECK(d.moved());
  // Equal speeds: the steps are near the ideal and nothing is tried.
  DrivenBalancer quiet("migrate", 100, nullptr, 0.9);
  std::string none;
  for (int i = 0; i < 30; ++i) append_event(none, quiet.step(1).trial);
  CHECK(none.empty());
}

TEST_CASE("closed loop: a policy may opt out and judge its own moves") {
  class Stubborn : public BalancePolicy {
   public:
    bool closed_loop() const override { return false; }
    Decision decide(const Observation& o) override {
      Plan plan = plan_migration(o.partition, o.speeds, o.model, o.comm, {50, 0.1});
      return plan.migrate ? migrate_by(plan) : keep_at(o, o.speeds);
    }
  };
  DrivenBalancer d("none", 100, std::make_unique<Stubborn>());
  d.steps_at(4, 1);
  std::string trials;
  for (int i = 0; i < 14; ++i) append_event(trials, d.step(0.5, 1, d.moved() ? 30.0 : 0.0).trial);
  CHECK(trials.empty());
  CHECK(d.moved());
}

TEST_CASE("closed loop: a busy machine's noise on both ranks moves units rarely and never back and forth") {
  // Every step each rank runs at 0.6x-1.25x its speed, independently: a machine busy with other
  // builds, no slowdown of its own. With `bursts`, now and then one rank also loses half its
  // core for 4 steps (a short real slowdown, which migrate answers and the hybrid resizes).
  // Counted: moves and undos in 2000 steps, closed loop and open loop, on the same noise.
  for (const bool bursts : {false, true})
    for (const std::string policy : {"migrate", "hybrid"}) {
      INFO(policy, std::string(bursts ? " with bursts" : ""));
      int changes[2] = {0, 0};
      for (const bool closed : {true, false}) {
        DrivenBalancer d(policy, 100, nullptr, 0.1, closed);
        std::mt19937 rng(7);
        std::uniform_real_distribution<double> jitter(0.6, 1.25);
        std::uniform_int_distribution<int> burst(0, 60);
        int slow_rank = -1, slow_left = 0;
        for (int step = 0; step < 2000; ++step) {
          if (bursts && slow_left == 0 && burst(rng) == 0) slow_rank = burst(rng) % 2, slow_left = 4;
          double s0 = jitter(rng), s1 = jitter(rng);
          if (slow_left > 0) (slow_rank == 0 ? s0 : s1) *= 0.5, --slow_left;
          BalanceStep b = d.step(s0, s1);
          changes[closed ? 0 : 1] += b.choice == "migrate" || b.choice == "undo";
        }
      }
      const std::string what = policy + (bursts ? " with bursts: " : ": ");
      MESSAGE(what, changes[0], " moves in 2000 steps, ", changes[1], " open loop");
      // Measured: 7 moves and undos in all, against 65 moves open loop.
      if (!bursts) CHECK(changes[0] <= 8);
      CHECK(changes[0] * 2 <= changes[1] + 1);  // with bursts, migrate's own moves stay (46 against 95)
    }
}

TEST_CASE("closed loop: a blip the hybrid resizes ends its try with a verdict, inconclusive, and backs off") {
  // Planted bug that fails this: Trials::cancel ending the try with no verdict.
  DrivenBalancer d("hybrid", 16);
  d.steps_at(6, 1);
  std::string trials;
  BalanceStep tried;
  for (double speed : {0.5, 1.0, 1.0, 1.0}) {
    BalanceStep b = d.step(speed);
    append_event(trials, b.trial);
    if (b.trial == "try") tried = b;
  }
  CHECK(trials == "try inconclusive");
  CHECK(tried.predicted_gain > 0.2);  // the resized step, predicted at the blip's speeds (was 0)
  CHECK(d.balancer->trials().backoff_left() > 0);
}

TEST_CASE("closed loop: heavy noise, spikes of 2-10x on both ranks, bounds the hybrid's tries and resized steps") {
  // A loaded single machine (load ~6 on 2 cores, issue 44): each step each rank is slowed 2-10x
  // with probability 0.15, independently of the other and of its own last step, and runs at
  // 0.9-1.1x otherwise. No rank is slow for good, so every resize is a bet on a spike lasting.
  // The bound: a try that is not kept backs off 16 steps, twice as long after each failure in a
  // row, up to 512 (trials.h), and a resize started on a spike is not kept (its gain is the spike
  // passing, not the predicted one, or it ends before its measurement: inconclusive). Spikes do
  // not reset the failures (only speeds steady at a new level do). So the first 6 tries take
  // 16 + 32 + ... + 512 = 1,008 steps of backoff, and each later one 512: in 4,000 steps at most
  // 1 + 6 + (4,000 - 1,008) / 512 = 12.8, so 13 tries, about 3 per 1,000. A resize's try runs at
  // most its trial's steps (settle + measure = 5) resized, so resized steps stay under 5 x 13 = 65
  // in 4,000, 16 per 1,000 (1.6%, against 6.8% on the loaded VM of issue 44). Measured: 12 tries
  // and 17-18 resized steps (487 tries and 746 resized steps while spikes reset the backoff).
  // Planted bugs that fail it: cancel() without a backoff; a failed resize's backoff reset by one
  // step's move of the shares out of a steady machine.
  for (double lambda : {0.0, 16.0}) {
    INFO("lambda ", lambda);
    DrivenBalancer d("hybrid", lambda);
    std::mt19937 rng(44);
    std::uniform_real_distribution<double> quiet(0.9, 1.1), factor(2, 10), draw(0, 1);
    auto speed = [&] {  // draws in a fixed order (see the jitter test above)
      const bool spike = draw(rng) < 0.15;
      const double f = factor(rng), q = quiet(rng);
      return spike ? 1 / f : q;
    };
    constexpr int kSteps = 4000;
    int tries = 0, verdicts = 0, resized = 0;
    std::string open;  // the try under way, if any
    for (int step = 0; step < kSteps; ++step) {
      const double s0 = speed(), s1 = speed();
      BalanceStep b = d.step(s0, s1);
      resized += b.choice == "resize";
      if (b.trial == "try") {
        CHECK_MESSAGE(open.empty(), "a try at step ", step, " while one is under way");
        ++tries, open = b.choice;
      } else if (!b.trial.empty()) {
        ++verdicts, open.clear();
        CHECK_FALSE(b.trial_why.empty());
      }
    }
    MESSAGE("lambda ", lambda, ": ", tries, " tries, ", resized, " resized steps in ", kSteps);
    CHECK(verdicts >= tries - 1);  // every try ends with a verdict (the last may be under way)
    CHECK(tries <= 13);
    CHECK(resized <= 65);
  }
}
