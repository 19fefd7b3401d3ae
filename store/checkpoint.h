#pragma once
// Checkpoints users can read anywhere:
//   PATH        safetensors weights with Hugging Face GPT-2 names, shapes and layouts (Conv1D
//               [in, out]; a SwiGLU MLP's c_gate and c_up are stored as c_fc is), whole and in
//               logical unit order whatever the partition; the model config in __metadata__.
//   PATH.state  safetensors state slots ("<name>.<slot>", same layout as the weights): the
//               optimizer's, with the step, optimizer, seed and data position in __metadata__.
// With a run id, both files carry the run's and the save's ids, and the loader takes only the
// state of the weights' save (another run's state of the same step is refused, naming both).
// The state is written first (as PATH.state.next), then the weights, each through a temporary
// file and a rename, then the state is renamed into place; both carry the step, and loading takes
// the state of the weights' step (from PATH.state.next after an interrupted save) or refuses.
#include <map>
#include <optional>
#include <string>

#include "core/safetensors.h"
#include "nn/gpt.h"
#include "optim/optimizer.h"

namespace flextp {

struct TrainState {
  int64_t step = 0;  // steps completed; also the data position (batches depend on the step)
  uint64_t seed = 0;
  std::map<std::string, std::string> extra;  // free-form (tokenizer, flags)
  // The run's identity (16 hex digits): drawn when a run starts from scratch, kept by the runs that
  // resume it; --keep-last removes only checkpoints of its own run. Empty: none (nor a save id).
  std::string run_id = {};
  // Set by load_checkpoint: the id of the save that wrote the files. Every save with a run id
  // draws one and writes it into both the weights and the optimizer state: a pair is one save's.
  std::string save_id = {};
};

// Rank 0 writes; every rank takes part in gathering units.
void save_checkpoint(const std::string& path, GPT& model, const Optimizer* optimizer,
                     const TrainState& state, Communicator* comm = nullptr);

// Loads the weights into `model` (checking config, names, shapes, dtypes) and, when optimizer is
// not null, the optimizer state. Returns the training state. Each rank reads its own units from
// the files: no communication.
TrainState load_checkpoint(const std::string& path, GPT& model, Optimizer* optimizer);

// Checks that `f` (read from `path`) holds exactly this model's weights, with flextp's names and
// Hugging Face shapes, then loads this rank's rows of each (nn/hf_import.h maps names first).
void load_weights(const SafetensorsFile& f, const std::string& path, GPT& model);

// DIR/model.safetensors (the weights alone) and DIR/config.json, which Hugging Face transformers
// loads as GPT2LMHeadModel.from_pretrained(DIR). Rank 0 writes; every rank takes part. Refuses a
// model that is not GPT-2 (check_gpt2_exportable), before any file is written. With gpt2_dir (the
// directory of GPT-2's encoder.json and vocab.bpe, for a model on GPT-2's vocabulary) the export
// also carries the tokenizer (store/hf_gpt2.h: write_hf_gpt2_tokenizer).
void export_hf(const std::string& dir, GPT& model, Communicator* comm = nullptr, const std::string& gpt2_dir = "");
// Throws unless a model of this config is a GPT-2 (its MLP kind is GPT-2's).
void check_gpt2_exportable(const GPTConfig& c);

// The config stored in a checkpoint's metadata (to build a model before loading).
GPTConfig read_checkpoint_config(const std::string& path);

// A checkpoint's (or a snapshot shard's) metadata entry `key` as a whole number, and its seed
// (unsigned 64-bit); throws naming `path` and the entry.
int64_t metadata_int(const std::map<std::string, std::string>& metadata, const std::string& path, const std::string& key);
uint64_t metadata_seed(const std::map<std::string, std::string>& metadata, const std::string& path);

// A run's state in a file's metadata, written and read alike by checkpoints and snapshot shards:
// "step", "run_id", an "extra.K" entry for each TrainState::extra entry (the recorded options), and
// with an optimizer its "optimizer", "optimizer_steps" and the run's "seed". Reading with an
// optimizer checks its kind and sets its step count; throws naming `path` and the entry.
void put_train_state(std::map<std::string, std::string>& meta, const TrainState& state, const Optimizer* optimizer);
TrainState train_state_of(const std::map<std::string, std::string>& meta, const std::string& path, Optimizer* optimizer);

// The model config as a checkpoint's metadata states it (n_layer, n_head, ...), and back (unchecked
// against any tensors).
std::map<std::string, std::string> config_metadata(const GPTConfig& c);
GPTConfig config_of_metadata(const std::map<std::string, std::string>& metadata, const std::string& path);

// The free-form entries (TrainState::extra) a checkpoint was saved with.
std::map<std::string, std::string> read_checkpoint_extra(const std::string& path);

// The seed the run that saved `path` used, from the optimizer state of the weights' step (as
// load_checkpoint picks it); none when there is no such state.
std::optional<uint64_t> read_checkpoint_seed(const std::string& path);

// Hugging Face layout <-> flextp layout for one logical tensor of a parameter (or of its optimizer
// slots), as the parameter's layer declared it (UnitLayout::hf: c_attn and c_fc differ).
Tensor to_hf_layout(const Parameter& p, const Tensor& logical, const GPTConfig& c);
Tensor from_hf_layout(const Parameter& p, const Tensor& hf, const GPTConfig& c);
Shape hf_shape(const Parameter& p, const Shape& logical);

}  // namespace flextp
