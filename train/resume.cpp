#include "train/resume.h"

#include <optional>

#include "core/text_fields.h"

namespace flextp {

uint64_t resumed_seed(const std::string& load, uint64_t seed, bool seed_given) {
  std::optional<uint64_t> saved = read_checkpoint_seed(load);
  if (!saved) return seed;  // no optimizer state: loading the checkpoint will say so
  FLEXTP_CHECK(!seed_given || seed == *saved, "--seed ", seed, " differs from the seed ", *saved, " that ", load,
               " was trained with: a resumed run keeps its seed (its data order and dropout depend on it); leave "
               "--seed out");
  return *saved;
}

CosineSchedule run_schedule(const OptimizationOptions& o, const TrainState& loaded, bool resumed, std::string& said) {
  CosineSchedule s = o.schedule;
  s.total = o.steps;
  if (!resumed) return s;
  auto kept = loaded.extra.find(kScheduleSteps);
  std::optional<int64_t> trained = kept == loaded.extra.end() ? std::nullopt : whole_int(kept->second);
  const std::string steps = std::to_string(o.steps);
  if (!trained)
    said = "the checkpoint does not say how long its learning-rate schedule was: it now ends at --steps " + steps + "\n";
  else if (*trained != o.steps && o.reset_schedule)
    said = "learning-rate schedule stretched from the checkpoint's " + std::to_string(*trained) + " steps to --steps " +
           steps + " (--reset-schedule)\n";
  else if (*trained != o.steps)
    said = "learning-rate schedule kept as trained: its cosine ends at step " + std::to_string(*trained) +
           " (not --steps " + steps + "; the steps after it run at --min-lr); --reset-schedule ends it at --steps\n";
  if (trained && !o.reset_schedule) s.total = *trained;
  return s;
}

}  // namespace flextp
