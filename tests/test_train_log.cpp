// What train's console says of the ranks: the monitor's table, units named by kind.
#include <doctest/doctest.h>

#include "train_log.cpp"  // train_progress.cpp: in test_train_progress.cpp

using namespace flextp;

TEST_CASE("the console's rank table names the units of each kind and the skipped ones") {
  RankRow fast, slow;
  fast.compute_ms = 219.3, fast.wait_ms = 71.3, fast.speed = 3.42e7;
  fast.units.held = {{UnitKind::Head, 8}, {UnitKind::Mlp, 32}, {UnitKind::Vocab, 2}};
  slow = fast;
  slow.units.held[UnitKind::Mlp] = 30;
  slow.units.skipped = 5;
  CHECK(rank_table({fast, slow}) ==
        "  rank 0: compute   219.3 ms  wait    71.3 ms  speed 3.42e+07  units head 8 mlp 32 vocab 2 skipped 0\n"
        "  rank 1: compute   219.3 ms  wait    71.3 ms  speed 3.42e+07  units head 8 mlp 30 vocab 2 skipped 5\n");
}
