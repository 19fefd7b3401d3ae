#pragma once
// What a run that starts from a checkpoint (--load) or a Hugging Face directory (--init-from-hf)
// takes from it: the options the files record, by the one rule of train/option_table.h, and a
// resumed run's learning-rate schedule even where --steps now differs (unless --reset-schedule).
#include <string>

#include "optim/schedule.h"
#include "store/checkpoint.h"
#include "train/option_table.h"
#include "train/options.h"

namespace flextp {

// Applies the resume rule to `table`'s options (bound to `o`) from what `o.checkpoint.load` records
// (its model config, the options its run recorded) or `o.checkpoint.init_from_hf` (the model's
// shape). --eval-only evaluates weights: it keeps their model and tokenizer and nothing of their
// run's seed. Returns the log's lines for the options given anew.
std::string take_recorded_options(const OptionTable& table, const TrainOptions& o);

// The checkpoint metadata key of the schedule's length in steps (TrainState::extra).
inline const char kScheduleSteps[] = "schedule_steps";

// The run's schedule: warm-up, then cosine decay to --min-lr at --steps. A resumed run keeps the
// length its checkpoint was trained with unless --reset-schedule is given; where the two differ,
// `said` gets a line that says which it did.
CosineSchedule run_schedule(const OptimizationOptions& o, const TrainState& loaded, bool resumed, std::string& said);

}  // namespace flextp
