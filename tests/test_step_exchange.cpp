// The ranks' per-step exchange (train/step_exchange.h) survives its trip on the wire, field by
// field, a non-finite gradient's NaN squares included; a row of another size is refused.
#include <doctest/doctest.h>

#include <cmath>

#include "core/error.h"
#include "train/step_exchange.h"

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

  sent.squares = {NAN, NAN};  // a step whose loss was not finite
  const StepExchange bad_step = StepExchange::from_wire(sent.to_wire());
  CHECK(std::isnan(bad_step.squares.split));
  CHECK(std::isnan(bad_step.squares.replicated));

  std::vector<double> short_row = sent.to_wire();
  short_row.pop_back();
  CHECK_THROWS_WITH_AS(StepExchange::from_wire(short_row), doctest::Contains("step exchange has"), Error);
}
