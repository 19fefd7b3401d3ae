#include "store/checkpoint.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include <set>
#include <type_traits>

#include "core/autograd.h"
#include "core/injected_faults.h"
#include "core/ops/shape_ops.h"
#include "core/safetensors.h"
#include "core/temp_files.h"
#include "core/text_fields.h"
#include "nn/mlp.h"
#include "parallel/tp/unit_gather.h"
#include "store/hf_gpt2.h"

namespace flextp {

int64_t metadata_int(const std::map<std::string, std::string>& metadata, const std::string& path, const std::string& key) {
  auto it = metadata.find(key);
  FLEXTP_CHECK(it != metadata.end(), path, ": metadata has no '", key, "'");
  std::optional<int64_t> v = whole_int(it->second);
  FLEXTP_CHECK(v, path, ": metadata '", key, "' = '", it->second, "' is not an integer");
  return *v;
}

// Seeds are unsigned 64-bit: the upper half of their range does not fit metadata_int.
uint64_t metadata_seed(const std::map<std::string, std::string>& metadata, const std::string& path) {
  auto it = metadata.find("seed");
  FLEXTP_CHECK(it != metadata.end(), path, ": metadata has no 'seed'");
  std::optional<uint64_t> seed = whole_uint(it->second);
  FLEXTP_CHECK(seed, path, ": metadata 'seed' = '", it->second, "' is not an unsigned integer");
  return *seed;
}

namespace {

HfLayout hf_layout(const Parameter& p) { return p.replicated() ? HfLayout::AsIs : p.layout->hf; }

// flextp keeps each head's q, k, v rows together (a unit is contiguous); Hugging Face keeps all
// q, then all k, then all v. Row r = (h, s, i) here is row s C + h D + i there.
int64_t hf_qkv_row(int64_t r, const GPTConfig& c) {
  int64_t d = c.head_dim();
  int64_t h = r / (3 * d), s = (r / d) % 3, i = r % d;
  return s * c.n_embd + h * d + i;
}

template <typename T>
Tensor permute_transpose(const Tensor& in, const GPTConfig& c, bool qkv, bool to_hf) {
  // in: one layout -> out: the other (weights transposed, QKV rows permuted).
  Shape shape = in.ndim() == 2 ? Shape{in.size(1), in.size(0)} : in.shape();
  Tensor out = Tensor::empty(shape, in.dtype());
  const T* src = in.data<T>();
  T* dst = out.data<T>();
  // Element (r, j) of ours [R, K] is element (j, col(r)) of hf's [K, R]; a bias [R] is K = 1.
  bool matrix = in.ndim() == 2;
  int64_t rows = matrix ? in.size(to_hf ? 0 : 1) : in.size(0), k = matrix ? in.size(to_hf ? 1 : 0) : 1;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t col = qkv ? hf_qkv_row(r, c) : r;
    for (int64_t j = 0; j < k; ++j) {
      int64_t ours = r * k + j, theirs = j * rows + col;
      if (to_hf)
        dst[theirs] = src[ours];
      else
        dst[ours] = src[theirs];
    }
  }
  return out;
}

Tensor convert(const Parameter& p, const Tensor& t, const GPTConfig& c, bool to_hf) {
  HfLayout layout = hf_layout(p);
  if (layout == HfLayout::AsIs || (layout == HfLayout::Conv1D && t.ndim() != 2)) return t;
  bool qkv = layout == HfLayout::Conv1DQkv;
  Tensor out;
  if (t.dtype() == DType::F64)
    out = permute_transpose<double>(t, c, qkv, to_hf);
  else
    out = permute_transpose<float>(t, c, qkv, to_hf);
  return out;
}

int64_t meta_int(const SafetensorsFile& f, const std::string& path, const std::string& key) {
  return metadata_int(f.metadata, path, key);
}

std::string meta_text(const std::map<std::string, std::string>& metadata, const std::string& key) {
  auto it = metadata.find(key);
  return it == metadata.end() ? "" : it->second;
}


std::string state_path(const std::string& path) { return path + ".state"; }
std::string next_state_path(const std::string& path) { return path + ".state.next"; }

// "step 20, run 0123456789abcdef, save fedcba9876543210" (or "no run id": older files).
std::string save_label(const std::map<std::string, std::string>& metadata) {
  std::string run = meta_text(metadata, "run_id"), save = meta_text(metadata, "save_id");
  return "step " + meta_text(metadata, "step") + ", " + (run.empty() ? "no run id" : "run " + run) +
         (save.empty() ? "" : ", save " + save);
}

// The optimizer state of the weights of `path` (metadata `weights`): PATH.state, or PATH.state.next
// after a save interrupted between its renames, of the same step and the same save. Throws naming
// both files when the only state there is of another step or another save.
std::string matching_state_path(const std::string& path, const std::map<std::string, std::string>& weights) {
  const std::string step = meta_text(weights, "step").empty() ? "0" : meta_text(weights, "step");
  const std::string save = meta_text(weights, "save_id");
  std::string other, other_label;
  for (const std::string& sp : {state_path(path), next_state_path(path)}) {
    if (!std::filesystem::exists(sp)) continue;
    std::map<std::string, std::string> s = read_safetensors_metadata(sp);
    if (std::to_string(metadata_int(s, sp, "step")) == step && meta_text(s, "save_id") == save) return sp;
    if (other.empty()) other = sp, other_label = save_label(s);
  }
  FLEXTP_CHECK(!other.empty(), "cannot resume from ", path, ": its optimizer state ", state_path(path), " is missing");
  FLEXTP_FAIL(other, " (", other_label, ") does not belong to ", path, " (", save_label(weights),
              "): the pair is inconsistent, written by different saves (an interrupted save, or another run's "
              "files?); use a checkpoint whose two files were saved together");
}

void rename_file(const std::string& from, const std::string& to) {
  FLEXTP_CHECK(std::rename(from.c_str(), to.c_str()) == 0, "cannot move ", from, " to ", to, ": ",
               std::strerror(errno));
}

// Checks that a file holds exactly the expected tensors with the expected shapes and dtype.
void check_tensors(const SafetensorsFile& f, const std::string& path,
                   const std::map<std::string, Shape>& expected, DType dtype) {
  for (const auto& [name, shape] : expected) {
    auto it = f.tensors.find(name);
    FLEXTP_CHECK(it != f.tensors.end(), path, ": tensor '", name, "' is missing");
    FLEXTP_CHECK(it->second.shape() == shape, path, ": tensor '", name, "' has shape ",
                 shape_str(it->second.shape()), ", the model needs ", shape_str(shape));
    FLEXTP_CHECK(it->second.dtype() == dtype, path, ": tensor '", name, "' is ",
                 dtype_name(it->second.dtype()), ", the model needs ", dtype_name(dtype));
  }
  for (const auto& [name, t] : f.tensors)
    FLEXTP_CHECK(expected.count(name), path, ": unexpected tensor '", name,
                 "' (not part of this model)");
}

template <typename T>
int64_t first_non_finite(const T* v, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (!std::isfinite(v[i])) return i;
  return -1;
}

void check_finite(const Tensor& t, const std::string& path, const std::string& name) {
  if (t.dtype() != DType::F32 && t.dtype() != DType::F64) return;
  int64_t at = t.dtype() == DType::F32 ? first_non_finite(t.data<float>(), t.numel())
                                       : first_non_finite(t.data<double>(), t.numel());
  if (at < 0) return;
  double v = t.dtype() == DType::F32 ? t.data<float>()[at] : t.data<double>()[at];
  FLEXTP_FAIL(path, ": tensor '", name, "' holds ", v, " at element ", at,
              ": the checkpoint is damaged or its run diverged; load an earlier checkpoint");
}

// Files hold the real vocabulary's rows of the token table (and of its optimizer slots); the
// model pads it to GPTConfig::padded_vocab rows, zeros that no file needs.
bool padded_in_model(const Parameter& p, const GPT& model) {
  return &p == &model.wte && model.config().padded_vocab() != model.config().vocab_size;
}

Shape stored_shape(const Parameter& p, const GPT& model) {
  Shape s = logical_shape(p);
  if (padded_in_model(p, model)) s[0] = model.config().vocab_size;
  return s;
}

Tensor drop_padding(const Parameter& p, const GPT& model, const Tensor& logical) {
  return padded_in_model(p, model) ? slice_rows(logical, 0, model.config().vocab_size).clone() : logical;
}

Tensor restore_padding(const Parameter& p, const GPT& model, const Tensor& stored) {
  if (!padded_in_model(p, model)) return stored;
  Tensor logical = Tensor::zeros(logical_shape(p), stored.dtype());
  slice_rows(logical, 0, stored.size(0)).copy_from(stored);
  return logical;
}

// The weights a file must hold for this model: names and (Hugging Face layout) shapes.
std::map<std::string, Shape> expected_weights(GPT& model) {
  std::map<std::string, Shape> expected;
  for (Parameter* p : model.parameters()) expected[p->name] = hf_shape(*p, stored_shape(*p, model));
  return expected;
}

// Each parameter takes its rows (this rank's units) of the file's whole tensor.
void copy_weights(const SafetensorsFile& f, GPT& model) {
  for (Parameter* p : model.parameters()) {
    Tensor logical = restore_padding(*p, model, from_hf_layout(*p, f.tensors.at(p->name), model.config()));
    p->value.copy_from(local_rows(*p, logical).to(p->value.device()));
  }
}

}  // namespace

std::map<std::string, std::string> config_metadata(const GPTConfig& c) {
  std::map<std::string, std::string> meta = saved_fields(c);
  meta["format"] = "flextp";
  return meta;
}

GPTConfig config_of_metadata(const std::map<std::string, std::string>& metadata, const std::string& path) {
  return config_of_saved_fields(metadata, path);
}

void load_weights(const SafetensorsFile& f, const std::string& path, GPT& model) {
  NoGradGuard ng;
  check_tensors(f, path, expected_weights(model), model.config().dtype);
  copy_weights(f, model);
}

Shape hf_shape(const Parameter& p, const Shape& logical) {
  if (logical.size() == 2 && hf_layout(p) != HfLayout::AsIs) return {logical[1], logical[0]};
  return logical;
}

Tensor to_hf_layout(const Parameter& p, const Tensor& logical, const GPTConfig& c) {
  return convert(p, logical, c, true);
}

Tensor from_hf_layout(const Parameter& p, const Tensor& hf, const GPTConfig& c) {
  return convert(p, hf, c, false);
}

void put_train_state(std::map<std::string, std::string>& meta, const TrainState& state, const Optimizer* optimizer) {
  meta["step"] = std::to_string(state.step);
  if (!state.run_id.empty()) meta["run_id"] = state.run_id;
  for (const auto& [k, v] : state.extra) meta["extra." + k] = v;  // the recorded options, checked on resume
  if (!optimizer) return;
  meta["optimizer"] = optimizer->name();
  meta["optimizer_steps"] = std::to_string(optimizer->steps_taken());
  meta["seed"] = std::to_string(state.seed);
}

TrainState train_state_of(const std::map<std::string, std::string>& meta, const std::string& path, Optimizer* optimizer) {
  TrainState state;
  state.step = metadata_int(meta, path, "step");
  state.run_id = meta_text(meta, "run_id");
  for (const auto& [k, v] : meta)
    if (k.rfind("extra.", 0) == 0) state.extra[k.substr(6)] = v;
  if (!optimizer) return state;
  FLEXTP_CHECK(meta_text(meta, "optimizer") == optimizer->name(), path, " holds ", meta_text(meta, "optimizer"),
               " state, but the run uses ", optimizer->name());
  optimizer->set_steps_taken(metadata_int(meta, path, "optimizer_steps"));
  state.seed = metadata_seed(meta, path);
  return state;
}

void save_checkpoint(const std::string& path, GPT& model, const Optimizer* optimizer,
                     const TrainState& state, Communicator* comm) {
  NoGradGuard ng;
  const GPTConfig& c = model.config();
  bool writer = comm == nullptr || comm->rank() == 0;
  std::vector<std::pair<std::string, Tensor>> weights, slots;
  for (Parameter* p : model.parameters()) {
    Tensor logical = gather_logical(*p, p->value, comm);
    if (writer) weights.push_back({p->name, to_hf_layout(*p, drop_padding(*p, model, logical), c)});
    if (!optimizer) continue;
    for (const std::string& s : optimizer->slot_names()) {
      auto it = p->state.find(s);
      Tensor local = it != p->state.end() ? it->second
                                          : Tensor::zeros(p->value.shape(), p->value.dtype());
      Tensor slot = gather_logical(*p, local, comm);
      if (writer) slots.push_back({p->name + "." + s, to_hf_layout(*p, drop_padding(*p, model, slot), c)});
    }
  }
  if (!writer) return;
  std::map<std::string, std::string> meta = config_metadata(c);
  put_train_state(meta, state, nullptr);
  if (!state.run_id.empty()) meta["save_id"] = random_hex_id();
  if (optimizer) {
    std::map<std::string, std::string> smeta = meta;
    put_train_state(smeta, state, optimizer);
    // The new state goes beside the old one until the weights are in place: a save killed at
    // any point leaves a pair of one step (the loader also looks for PATH.state.next).
    write_safetensors(next_state_path(path), slots, smeta);
  }
  meta["format"] = "pt";  // what transformers asks of a safetensors file
  injected_fault::slow_save();
  write_safetensors(path, weights, meta);
  if (optimizer) rename_file(next_state_path(path), state_path(path));
}

void check_gpt2_exportable(const GPTConfig& c) {
  FLEXTP_CHECK(!mlp_registration(c.mlp).gpt2_activation.empty(), "a model with the ", c.mlp,
               " MLP is not GPT-2 (whose MLP is gelu): transformers' GPT2LMHeadModel cannot load it");
}

void export_hf(const std::string& dir, GPT& model, Communicator* comm, const std::string& gpt2_dir) {
  check_gpt2_exportable(model.config());
  bool writer = comm == nullptr || comm->rank() == 0;
  if (writer) make_directories(dir);
  save_checkpoint(dir + "/model.safetensors", model, nullptr, TrainState{}, comm);
  if (!writer) return;
  const GPTConfig& c = model.config();
  nlohmann::json config = {{"architectures", {"GPT2LMHeadModel"}},
                           {"model_type", "gpt2"},
                           {"n_inner", c.mlp_hidden()},
                           {"activation_function", mlp_registration(c.mlp).gpt2_activation},
                           {"layer_norm_epsilon", 1e-5},
                           {"resid_pdrop", 0.0},
                           {"embd_pdrop", 0.0},
                           {"attn_pdrop", 0.0},
                           {"tie_word_embeddings", true},
                           {"torch_dtype", "float32"}};
  // The fields' keys, after GPT-2's fixed settings: a field carrying one of those replaces it.
  for_each_field(c, [&](const ConfigField& f, const auto& value) {
    using T = std::decay_t<decltype(value)>;
    if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, double>)
      if (f.hf) config[f.hf] = value;
  });
  // GPT-2's end-of-text token when the vocabulary is GPT-2's; none otherwise (transformers'
  // default of 50256 would lie outside a smaller vocabulary).
  config["bos_token_id"] = config["eos_token_id"] = c.vocab_size == 50257 ? nlohmann::json(50256) : nlohmann::json(nullptr);
  write_file_atomic(dir + "/config.json", config.dump(2) + "\n");
  if (!gpt2_dir.empty()) write_hf_gpt2_tokenizer(dir, gpt2_dir, c.n_positions);
}

std::map<std::string, std::string> read_checkpoint_extra(const std::string& path) {
  std::map<std::string, std::string> extra;
  for (const auto& [k, v] : read_safetensors_metadata(path))
    if (k.rfind("extra.", 0) == 0) extra[k.substr(6)] = v;
  return extra;
}

std::optional<uint64_t> read_checkpoint_seed(const std::string& path) {
  std::string sp;
  try {
    sp = matching_state_path(path, read_safetensors_metadata(path));
  } catch (const Error&) {
    return std::nullopt;  // no state of these weights: loading the checkpoint says why
  }
  return metadata_seed(read_safetensors_metadata(sp), sp);
}

namespace {

// A model is built from the metadata in full before its tensors are read into it: sizes the file's
// tensors do not back (n_layer 1000000000, n_positions 2^63 - 1) must stop here.
void check_config_against_tensors(const SafetensorsFile& f, const std::string& path, const GPTConfig& c) {
  auto expect = [&](const char* name, const Shape& shape, const std::string& settings) {
    auto it = f.tensors.find(name);
    FLEXTP_CHECK(it != f.tensors.end(), path, ": tensor '", name, "' is missing");
    FLEXTP_CHECK(it->second.shape() == shape, path, ": metadata says ", settings, " but tensor '", name,
                 "' has shape ", shape_str(it->second.shape()), ": the metadata and the tensors disagree");
  };
  const std::string embd = "n_embd " + std::to_string(c.n_embd);
  expect("ln_f.weight", {c.n_embd}, embd);
  expect("wte.weight", {c.vocab_size, c.n_embd}, "vocab_size " + std::to_string(c.vocab_size) + ", " + embd);
  expect("wpe.weight", {c.n_positions, c.n_embd}, "n_positions " + std::to_string(c.n_positions) + ", " + embd);
  std::set<int64_t> blocks;  // the N of every tensor "h.N...."
  for (const auto& [name, t] : f.tensors) {
    if (name.rfind("h.", 0) != 0) continue;
    std::optional<int64_t> n = whole_int(name.substr(2, name.find('.', 2) - 2));
    FLEXTP_CHECK(n && *n >= 0, path, ": tensor '", name, "' is not named h.LAYER.*");
    blocks.insert(*n);
  }
  const int64_t held = static_cast<int64_t>(blocks.size());
  FLEXTP_CHECK(c.n_layer == held && (held == 0 || *blocks.rbegin() == held - 1), path, ": metadata says n_layer ",
               c.n_layer, " but the file holds the tensors of ", held, " blocks",
               held ? " (h." + std::to_string(*blocks.begin()) + " to h." + std::to_string(*blocks.rbegin()) + ")" : "",
               ": the metadata and the tensors disagree");
  FLEXTP_CHECK(c.n_head > 0 && c.n_head <= c.n_embd && c.n_embd % c.n_head == 0, path, ": metadata n_head ",
               c.n_head, " does not divide n_embd ", c.n_embd);
}

// The config the metadata states, unchecked against the tensors. An optimizer state (PATH.state,
// which repeats the config beside its slots) is refused as what it is.
GPTConfig config_from_metadata(const SafetensorsFile& f, const std::string& path) {
  auto optimizer = f.metadata.find("optimizer");
  if (optimizer != f.metadata.end()) {
    std::string weights = path;
    for (const std::string tail : {".state.next", ".state"})
      if (weights.size() > tail.size() && weights.compare(weights.size() - tail.size(), tail.size(), tail) == 0) {
        weights.resize(weights.size() - tail.size());
        break;
      }
    FLEXTP_FAIL(path, " is an optimizer-state file (", optimizer->second, "), not weights: give the weights file it was ",
                "saved beside, ", weights == path ? "its name without .state" : weights);
  }
  return config_of_metadata(f.metadata, path);
}

}  // namespace

GPTConfig read_checkpoint_config(const std::string& path) {
  SafetensorsFile f = read_safetensors(path);
  GPTConfig c = config_from_metadata(f, path);
  check_config_against_tensors(f, path, c);
  return c;
}


TrainState load_checkpoint(const std::string& path, GPT& model, Optimizer* optimizer) {
  NoGradGuard ng;
  const GPTConfig& c = model.config();
  SafetensorsFile f = read_safetensors(path);
  GPTConfig saved = config_from_metadata(f, path);  // the built model, not the metadata, is checked against the tensors
  const std::map<std::string, std::string> built = saved_fields(c);
  for (const auto& [field, value] : saved_fields(saved))
    FLEXTP_CHECK(value == built.at(field), path, ": checkpoint has ", field, " ", value,
                 " but the model was built with ", built.at(field), " (match the flags to the checkpoint)");

  std::vector<Parameter*> params = model.parameters();
  std::map<std::string, Shape> expected = expected_weights(model);
  check_tensors(f, path, expected, c.dtype);

  TrainState state;
  SafetensorsFile s;  // the optimizer state
  if (optimizer) {
    std::string sp = matching_state_path(path, f.metadata);
    s = read_safetensors(sp);
    state = train_state_of(s.metadata, sp, optimizer);
    std::map<std::string, Shape> slots;
    for (Parameter* p : params)
      for (const std::string& slot : optimizer->slot_names()) slots[p->name + "." + slot] = expected[p->name];
    check_tensors(s, sp, slots, c.dtype);
    for (const auto& [name, t] : s.tensors) check_finite(t, sp, name);
  }
  state.step = f.metadata.count("step") ? meta_int(f, path, "step") : 0;  // weights alone (an export): step 0
  state.run_id = meta_text(f.metadata, "run_id"), state.save_id = meta_text(f.metadata, "save_id");

  // A NaN or an infinity in the weights or their state would skip every step (or evaluate to nan).
  for (const auto& [name, t] : f.tensors) check_finite(t, path, name);
  copy_weights(f, model);
  for (Parameter* p : params) {
    if (!optimizer) continue;
    for (const std::string& slot : optimizer->slot_names()) {
      Tensor ls = restore_padding(*p, model, from_hf_layout(*p, s.tensors.at(p->name + "." + slot), c));
      p->state[slot] = local_rows(*p, ls).to(p->value.device());
    }
  }
  return state;
}

}  // namespace flextp
