// Partitions: proportional splits, explicit assignments, and every malformed spec named clearly.
#include <doctest/doctest.h>

#include <limits>

#include "core/error.h"
#include "nn/units.h"
#include "parallel/tp/partition.h"

using namespace flextp;

namespace {
std::vector<UnitGroup> groups() {
  GPTConfig c;
  c.n_layer = 2;
  c.n_head = 4;
  c.n_embd = 64;
  c.mlp_unit = 64;  // 4 MLP units
  c.vocab_size = 256;
  c.vocab_unit = 64;  // 4 vocabulary units
  return unit_groups(c);
}
}  // namespace

TEST_CASE("proportional partitions: largest remainders, contiguous, deterministic") {
  Partition p = Partition::proportional(groups(), {3, 1});
  CHECK(p.owners("h.0.head") == std::vector<int>{0, 0, 0, 1});
  CHECK(p.units_of("h.1.mlp", 1) == std::vector<int64_t>{3});
  Partition e = Partition::even(groups(), 3);
  CHECK(e.owners("vocab") == std::vector<int>{0, 0, 1, 2});  // ties go to the lower rank
  Partition z = Partition::proportional(groups(), {1, 100});
  CHECK(z.units_of("h.0.head", 0).empty());  // a rank may own nothing
  CHECK(z.str().find("h.0.head 0:4") != std::string::npos);
}

TEST_CASE("proportional partitions of extreme finite weights: every unit owned once, by the heavy ranks") {
  const double huge = std::numeric_limits<double>::max(), tiny = std::numeric_limits<double>::denorm_min();
  const Partition even = Partition::even(groups(), 2);
  CHECK(Partition::proportional(groups(), {1e308, 1e308}) == even);  // their sum overflows
  CHECK(Partition::proportional(groups(), {huge, huge}) == even);
  CHECK(Partition::proportional(groups(), {tiny, tiny}) == even);
  Partition p = Partition::proportional(groups(), {1e308, 1});  // a share times units overflows
  Partition q = Partition::proportional(groups(), {1, tiny});
  for (const Partition& r : {p, q})
    for (const UnitGroup& g : groups()) {
      INFO(g.name);
      CHECK(r.owners(g.name) == std::vector<int>(static_cast<size_t>(g.units), 0));
    }
}

TEST_CASE("explicit assignments per kind and per layer") {
  Partition p = Partition::even(groups(), 2);
  apply_tp_assignment(p, groups(), "head=0,2|1,3");
  CHECK(p.owners("h.0.head") == std::vector<int>{0, 1, 0, 1});
  CHECK(p.owners("h.1.head") == std::vector<int>{0, 1, 0, 1});
  apply_tp_assignment(p, groups(), "mlp@1=|0-3");
  CHECK(p.owners("h.1.mlp") == std::vector<int>{1, 1, 1, 1});
  CHECK(p.owners("h.0.mlp") == std::vector<int>{0, 0, 1, 1});
  apply_tp_assignment(p, groups(), "vocab=3|0-2");
  CHECK(p.owners("vocab") == std::vector<int>{1, 1, 1, 0});
}

TEST_CASE("malformed partitions give clear errors") {
  Partition p = Partition::even(groups(), 2);
  auto fails = [&](const std::string& spec, const std::string& message) {
    INFO(spec);
    CHECK_THROWS_WITH_AS(apply_tp_assignment(p, groups(), spec), doctest::Contains(message.c_str()), Error);
  };
  fails("heads=0|1,2,3", "unknown unit kind 'heads'");
  fails("head=0,1|2", "unit 3 of h.0.head is owned by no rank");
  fails("head=0,1,2|2,3", "unit 2 of h.0.head is owned twice (ranks 0 and 1)");
  fails("head=0-9|", "outside h.0.head's 4 units");
  fails("head=0|1|2,3", "lists 3 ranks but there are 2");
  fails("head=a|0-3", "'a' is not a unit number");
  fails("head", "needs KIND=UNITS");
  fails("mlp@7=0-3|", "names no unit group");
  CHECK_THROWS_WITH_AS(parse_tp_weights("3,1,1", 2), doctest::Contains("has 3 weights for 2 ranks"), Error);
  CHECK_THROWS_WITH_AS(parse_tp_weights("3,0", 2), doctest::Contains("weight 0 must be positive"), Error);
  CHECK_THROWS_WITH_AS(parse_tp_weights("3,-1", 2), doctest::Contains("must be positive"), Error);
  CHECK_THROWS_WITH_AS(parse_tp_weights("3,x", 2), doctest::Contains("'x' is not a number"), Error);
  CHECK_THROWS_WITH_AS(parse_tp_weights("1,inf", 2), doctest::Contains("weight inf is not a finite number"), Error);
  CHECK_THROWS_WITH_AS(parse_tp_weights("nan,1", 2), doctest::Contains("weight nan is not a finite number"), Error);
  CHECK_THROWS_WITH_AS(parse_tp_weights("1e999,1", 2), doctest::Contains("'1e999' is not a number"), Error);
  CHECK_THROWS_WITH_AS(parse_tp_weights("1e308,1", 2),
                       doctest::Contains("weight 1e+308 is more than 1e+06 times weight 1"), Error);
  CHECK_THROWS_WITH_AS(parse_tp_weights("1,2e-7", 2),
                       doctest::Contains("weight 1 is more than 1e+06 times weight 2e-07"), Error);
  CHECK(parse_tp_weights("1e6,1", 2) == std::vector<double>{1e6, 1});  // the widest ratio allowed
  CHECK_THROWS_WITH_AS(p.owners("h.9.head"), doctest::Contains("no unit group 'h.9.head'"), Error);
  CHECK_THROWS_WITH_AS(p.set_owners("vocab", {0, 2, 0, 0}), doctest::Contains("owner 2 is not a rank"), Error);
}
