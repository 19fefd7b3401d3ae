// Fuzzes the parsers of user specs: --straggler, --contend, --tp-weights, --tp-assign and
// --straggler-trace files.
#include "core/error.h"
#include "fuzz/fuzz_file.h"
#include "nn/units.h"
#include "parallel/partition.h"
#include "parallel/straggler.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string spec(reinterpret_cast<const char*>(data), size);
  auto guard = [](auto&& f) {
    try {
      f();
    } catch (const flextp::Error&) {
    }
  };
  guard([&] { (void)flextp::parse_straggler(spec); });
  guard([&] { (void)flextp::parse_contend(spec); });
  guard([&] { (void)flextp::parse_tp_weights(spec, 4); });
  guard([&] {
    flextp::GPTConfig c;
    c.n_layer = 2, c.n_head = 4, c.n_embd = 32, c.vocab_size = 100, c.n_positions = 16, c.mlp_unit = 32, c.vocab_unit = 16;
    std::vector<flextp::UnitGroup> groups = flextp::unit_groups(c);
    flextp::Partition p = flextp::Partition::even(groups, 3);
    flextp::apply_tp_assignment(p, groups, spec);
  });
  guard([&] {
    flextp::SlowdownSchedule s({}, 3);
    s.load_trace(flextp::fuzz::as_file(data, size, ".csv"));
  });
  return 0;
}
