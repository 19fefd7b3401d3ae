#pragma once
// What a resumed run (--load) keeps of the run it continues: its seed, and its learning-rate
// schedule even where --steps now differs (unless --reset-schedule).
#include <cstdint>
#include <string>

#include "store/checkpoint.h"
#include "optim/schedule.h"
#include "train/options.h"

namespace flextp {

// The seed a resumed run goes on with: the checkpoint's (the batches and dropout masks of the
// steps still to come depend on it). Another --seed given explicitly (`seed_given`) is refused.
uint64_t resumed_seed(const std::string& load, uint64_t seed, bool seed_given);

// The checkpoint metadata key of the schedule's length in steps (TrainState::extra).
inline const char kScheduleSteps[] = "schedule_steps";

// The run's schedule: warm-up, then cosine decay to --min-lr at --steps. A resumed run keeps the
// length its checkpoint was trained with unless --reset-schedule is given; where the two differ,
// `said` gets a line that says which it did.
CosineSchedule run_schedule(const OptimizationOptions& o, const TrainState& loaded, bool resumed, std::string& said);

}  // namespace flextp
