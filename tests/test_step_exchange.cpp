// The ranks' per-step exchange (train/step_exchange.h) survives its trip on the wire, field by
// field, a non-finite gradient's NaN squares included; a row of another size is refused.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "core/error.h"
#include "train/step_exchange.h"
#include "train/group_metrics.h"

using namespace flextp;

TEST_CASE("the step exchange: every field comes back from the wire where it was put") {
  StepExchange sent;
  sent.report.compute_ms = 12.5, sent.report.wait_ms = 3.25, sent.report.work = 1e6;
  sent.report.units.held = {{UnitKind::Head, 2}, {UnitKind::Mlp, 4}, {UnitKind::Vocab, 1}};
  sent.report.units.skipped = 3;
  sent.squares = {7.5, 0.125};
  sent.stop_request = 15;
  const StepExchange got = StepExchange::from_wire(sent.to_wire());
  CHECK(got.report.compute_ms == 12.5);
  CHECK(got.report.wait_ms == 3.25);
  CHECK(got.report.work == 1e6);
  CHECK(got.report.units == sent.report.units);
  CHECK(got.squares.split == 7.5);
  CHECK(got.squares.replicated == 0.125);
  CHECK(got.stop_request == 15);
  CHECK(got.metrics.empty());

  sent.squares = {NAN, NAN};  // a step whose loss was not finite
  const StepExchange bad_step = StepExchange::from_wire(sent.to_wire());
  CHECK(std::isnan(bad_step.squares.split));
  CHECK(std::isnan(bad_step.squares.replicated));

  std::vector<double> short_row = sent.to_wire();
  short_row.pop_back();
  CHECK_THROWS_WITH_AS(StepExchange::from_wire(short_row), doctest::Contains("step exchange has"), Error);
}

TEST_CASE("group metrics: each rank's shares cross the wire, and the group's sums give the values") {
  StepExchange a, b;
  a.metrics = {{{3, 1}, {0, 0}}, {{2, 0.5}}};  // rank 0: a list of two values, then one value
  b.metrics = {{{5, 1}, {4, 0}}, {{6, 0.5}}};  // rank 1: the replicated part as rank 0's
  const StepExchange got = StepExchange::from_wire(b.to_wire());
  REQUIRE(got.metrics.size() == 2);
  CHECK(got.metrics[0].size() == 2);
  CHECK(got.metrics[0][1].split == 4);
  CHECK(got.metrics[1][0].replicated == 0.5);
  std::vector<double> cut = b.to_wire();
  cut.pop_back();
  CHECK_THROWS_WITH_AS(StepExchange::from_wire(cut), doctest::Contains("too few for the 1 shares"), Error);

  const auto none = [](const GPT&, const std::vector<Parameter*>&) { return MetricShares{}; };
  const std::vector<GroupMetric> metrics = {{"norms", true, none, [](double s) { return std::sqrt(s); }},
                                            {"sum", false, none, [](double s) { return s; }}};
  const std::vector<MetricValues> values = metric_values({a.metrics, got.metrics}, metrics);
  REQUIRE(values.size() == 2);
  CHECK(std::string(values[0].name) == "norms");
  CHECK(values[0].values == std::vector<double>{3, 2});  // sqrt(3 + 5 + 1), sqrt(0 + 4)
  CHECK(values[1].values == std::vector<double>{8.5});
}
