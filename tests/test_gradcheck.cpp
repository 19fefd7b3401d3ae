// The gradient harness itself: which entries it checks.
#include <doctest/doctest.h>

#include <set>

#include "tests/gradcheck.h"

using namespace flextp;

TEST_CASE("the gradient harness checks distinct random entries, across columns, or all of a small input") {
  std::vector<int64_t> all = test::entries_to_check(10, 200, 1);
  CHECK(all == std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  // A [24, 8] weight (c_attn of the tiny GPT): a stride of 192 / 12 = 16 would see column 0 only.
  std::vector<int64_t> some = test::entries_to_check(24 * 8, 12, 1);
  REQUIRE(some.size() == 12);
  CHECK(std::set<int64_t>(some.begin(), some.end()).size() == 12);
  CHECK(std::is_sorted(some.begin(), some.end()));
  std::set<int64_t> columns;
  for (int64_t i : some) {
    CHECK((i >= 0 && i < 24 * 8));
    columns.insert(i % 8);
  }
  CHECK(columns.size() >= 4);
  CHECK(test::entries_to_check(24 * 8, 12, 2) != some);  // the seed chooses
}
