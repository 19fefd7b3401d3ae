#include "train/output_paths.h"

#include <ctime>
#include <filesystem>

#include "core/error.h"
#include "store/checkpoint_files.h"

namespace flextp {

namespace {

// runs/NAME for --name; else runs/ and the start time, YYYYMMDD-HHMMSS (UTC), with -2, -3 ...
// added where a run of the same second has it already.
std::string run_directory(const std::string& name) {
  namespace fs = std::filesystem;
  if (!name.empty()) return (fs::path("runs") / name).string();
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &utc);
  std::string dir = (fs::path("runs") / stamp).string();
  std::error_code ec;
  for (int n = 2; fs::exists(dir, ec); ++n) dir = (fs::path("runs") / stamp).string() + "-" + std::to_string(n);
  return dir;
}

// Whether this run saves without --save: it trains (--steps above 0, not --eval-only) and
// --no-save is not given. The same on every rank.
bool saves_by_default(const TrainOptions& o) {
  return o.checkpoint.save.empty() && !o.checkpoint.no_save && !o.output.eval_only && o.optimization.steps > 0;
}

}  // namespace

std::string prepare_output_paths(TrainOptions& o, bool lead) {
  CheckpointOptions& c = o.checkpoint;
  std::string said;
  if (saves_by_default(o)) {
    // Only the lead rank writes files: the others need no more than to know that the run saves.
    std::string dir = lead ? run_directory(c.name) : "runs/" + c.name;
    c.save = (std::filesystem::path(dir) / "model.safetensors").string();
    // Made by the first save (RunOutputs::save), so that a run refused before it leaves none.
    if (lead) check_checkpoint_path(c.save, "the checkpoint");
    said = "checkpoint: " + c.save + " (no --save given; --no-save keeps nothing)\n";
  } else if (lead && !c.save.empty()) {
    check_checkpoint_path(c.save, "--save");
  }
  if (lead && !c.export_hf.empty()) check_export_dir(c.export_hf, "--export-hf");
  return said;
}

}  // namespace flextp
