#include "train/run_outputs.h"

#include <filesystem>

#include "core/temp_files.h"
#include "data/tokenizer.h"
#include "nn/generate.h"
#include "store/checkpoint_files.h"
#include "train/flags.h"

namespace flextp {

RunOutputs::RunOutputs(const TrainOptions& o, GPT& model, Optimizer& opt, Communicator& clock, Communicator& world,
                       Watchdog& watchdog, TrainLog& log, const Tokenizer& tok, TrainState state, bool writer)
    : o_(o), model_(model), opt_(opt), clock_(clock), world_(world), watchdog_(watchdog), log_(log), tok_(tok),
      state_(std::move(state)), writer_(writer), lead_(world.rank() == 0) {}

void RunOutputs::save(const std::string& path, int64_t step) {
  state_.step = step;
  unwatched([&] {
    try {
      if (lead_) make_directories(std::filesystem::path(path).parent_path());  // train/output_paths.h
      if (lead_) remove_stale_checkpoint_temporaries(o_.checkpoint.save);  // of saves killed mid-write, any step's
      if (writer_) save_checkpoint(path, model_, &opt_, state_, &clock_);
    } catch (const Error& e) {  // a full disk: files are replaced by rename, so the old ones stand
      FLEXTP_FAIL("cannot save checkpoint ", path, " (step ", step, "): ", e.what(),
                  "; the files of any earlier save are untouched");
    }
  });
  log_.say("saved %s (step %lld)\n", path.c_str(), (long long)step);
}

void RunOutputs::save_periodic(int64_t step) {
  const CheckpointOptions& c = o_.checkpoint;
  save(periodic_checkpoint_path(c.save, step), step);
  if (lead_ && c.keep_last > 0) remove_old_checkpoints(c.save, c.keep_last, state_.run_id, step);
}

void RunOutputs::sample(int64_t tokens, const std::string& title) {
  const OutputOptions& s = o_.output;
  std::vector<int32_t> prompt = tok_.encode(s.prompt.empty() ? "\n" : s.prompt);
  std::vector<int32_t> out;
  unwatched([&] { out = generate(model_, prompt, {tokens, s.temperature, s.top_k, o_.seed}); });
  model_.set_training(true);  // generate() left it in evaluation mode (no dropout)
  log_.say("---- %s ----\n%s\n----------------\n", title.c_str(), tok_.decode(out).c_str());
}

void RunOutputs::export_hf() {
  const std::string& dir = o_.checkpoint.export_hf;
  // A model on GPT-2's vocabulary carries GPT-2's tokenizer files.
  bool gpt2_vocabulary = tok_.name() == std::string("gpt2") && model_.config().vocab_size == tok_.vocab_size();
  std::string gpt2_dir = gpt2_vocabulary ? gpt2_dir_from_flags(o_.data.tokenizer_dir) : "";
  unwatched([&] {
    if (writer_) with_flag("--export-hf", [&] { flextp::export_hf(dir, model_, &clock_, gpt2_dir); });
  });
  log_.say("exported %s/config.json and %s/model.safetensors%s (transformers: GPT2LMHeadModel.from_pretrained)\n",
           dir.c_str(), dir.c_str(), gpt2_vocabulary ? " with GPT-2's tokenizer files" : "");
}

}  // namespace flextp
