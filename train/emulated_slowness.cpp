#include "train/emulated_slowness.h"

#include "train/flags.h"

namespace flextp {

SlowdownSchedule slowdown(const HarnessOptions& o, const Grid& grid) {
  std::vector<StragglerSpec> specs;
  for (const std::string& s : o.stragglers) specs.push_back(with_flag("--straggler", [&] { return parse_straggler(s); }));
  SlowdownSchedule world = with_flag("--straggler", [&] { return SlowdownSchedule(specs, grid.world()); });
  if (!o.straggler_trace.empty()) with_flag("--straggler-trace", [&] { world.load_trace(o.straggler_trace); });
  return world.ranks(grid.world_rank_of(grid.dp_rank, 0), grid.tp);
}

std::unique_ptr<Contention> contention(const HarnessOptions& o, const Communicator& world, Device device) {
  std::unique_ptr<Contention> out;
  for (const std::string& spec : o.contend) {
    ContendSpec c = with_flag("--contend", [&] { return parse_contend(spec); });
    FLEXTP_CHECK(c.rank < world.size(), "--contend names rank ", c.rank, " but there are only ", world.size());
    if (c.rank == world.rank())
      out = with_flag("--contend", [&] {
        return std::make_unique<Contention>(c, device.is_cuda() ? std::optional<int>(device.index) : std::nullopt);
      });
  }
  return out;
}

}  // namespace flextp
