// What train's console says of the ranks (the monitor's table, units named by kind), and what its
// metrics log writes.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/temp_dir.h"
#include "train/log.h"

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

TEST_CASE("the metrics log writes each group metric under its name: a list, or one value; null where not finite") {
  test::TempDir dir("metricslog");
  OutputOptions o;
  o.metrics = dir.file("m.jsonl");
  {
    TrainLog log(true, o, 10, 64, false);
    StepReport r;
    r.step = 3, r.loss = 2.5, r.grad_norm = 1.0;
    r.metrics = {{"block_norms", true, {1.5, NAN}}, {"total", false, {2.0}}};
    log.metrics(r);
  }
  std::ifstream in(o.metrics);
  nlohmann::json line = nlohmann::json::parse(std::string(std::istreambuf_iterator<char>(in), {}));
  CHECK(line["step"] == 3);
  CHECK(line["block_norms"] == nlohmann::json::parse("[1.5, null]"));
  CHECK(line["total"] == 2.0);
}
