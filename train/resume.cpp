#include "train/resume.h"

#include <optional>

#include "core/text_fields.h"
#include "store/hf_gpt2.h"
#include "train/flags.h"

namespace flextp {

namespace {

// What checkpoint `path` records: its model config's saved fields and its "extra." entries. Files
// written before options were recorded (before 2026-12-04) hold the seed in their optimizer state
// alone, and their tokenizer as an extra entry.
std::map<std::string, std::string> checkpoint_records(const std::string& path, bool eval_only) {
  std::map<std::string, std::string> records = saved_fields(read_checkpoint_config(path));
  for (const auto& [key, value] : read_checkpoint_extra(path)) records[key] = value;
  if (eval_only) {
    records.erase("seed");
  } else if (!records.count("seed")) {
    if (std::optional<uint64_t> seed = read_checkpoint_seed(path)) records["seed"] = std::to_string(*seed);
  }
  return records;
}

}  // namespace

std::string take_recorded_options(const OptionTable& table, const TrainOptions& o) {
  const CheckpointOptions& ck = o.checkpoint;
  if (ck.load.empty() && ck.init_from_hf.empty()) return "";
  auto given = [&](const std::string& flag) { return table.app().count(flag) > 0; };
  if (!ck.load.empty()) return resume_options(table, checkpoint_records(ck.load, o.output.eval_only), ck.load, given);
  const GPTConfig hf = with_flag("--init-from-hf", [&] { return read_hf_config(ck.init_from_hf); });
  return resume_options(table, saved_fields(hf), ck.init_from_hf, given);
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
