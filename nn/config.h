#pragma once
// The shape of a GPT model, checked once, with messages that say which setting to change.
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "core/dtype.h"

namespace flextp {

// The largest value of any one size (token ids are int32, and products of sizes must fit 64 bits).
constexpr int64_t kMaxModelSize = 2147483647;

struct GPTConfig {
  int64_t vocab_size = 256;
  int64_t n_positions = 128;  // longest sequence (size of the position table)
  int64_t n_layer = 4;
  int64_t n_head = 4;
  int64_t n_embd = 128;
  int64_t mlp_unit = 32;     // MLP neurons per tensor-parallel unit
  std::string mlp = "gelu";  // the MLP kind (nn/mlp_kinds.h): gelu (GPT-2's) or swiglu
  int64_t vocab_unit = 64;   // vocabulary rows per tensor-parallel unit (the last may be short)
  // The model's token table and LM head have vocab_size rows rounded up to a multiple of this
  // (GPT-2's 50257 -> 50304), so that the LM-head GEMMs are aligned; 1: no padding. The padded
  // rows stay zero, their logits never count and files never hold them.
  int64_t vocab_pad = 128;
  double dropout = 0.0;
  uint64_t seed = 1337;      // initialisation
  DType dtype = DType::F32;  // f64 for gradient checks

  int64_t head_dim() const { return n_embd / n_head; }
  int64_t mlp_hidden() const { return 4 * n_embd; }  // neurons of every MLP kind
  int64_t n_mlp_units() const { return mlp_hidden() / mlp_unit; }
  int64_t padded_vocab() const { return (vocab_size + vocab_pad - 1) / vocab_pad * vocab_pad; }
  // Vocabulary units cover the padded rows: the padding lies at the end of the last unit(s).
  int64_t n_vocab_units() const { return (padded_vocab() + vocab_unit - 1) / vocab_unit; }

  // The parameters of the whole model (an upper bound: the widest MLP kind), or nothing when
  // the count does not fit 64 bits. Meaningful for sizes within kMaxModelSize.
  std::optional<int64_t> parameter_bound() const;

  // Throws flextp::Error naming the first impossible setting (by its field name, which train
  // turns into its flag): a size out of range, or a model whose weights alone exceed this machine's
  // memory.
  void validate() const;
  std::string str() const;  // the fields the run header shows: "n_layer 4, n_head 4, ..."
};

// What the rest of flextp knows of a GPTConfig field (for_each_field).
struct ConfigField {
  const char* name;  // in checkpoints' metadata, errors and train's flag declarations
  const char* shown;  // in GPTConfig::str (the run header), or nullptr
  // The model's shape: checkpoints record it (a resumed run must match it). A file written before
  // the field existed lacks it and means `if_missing` (nullptr: such a file is refused).
  bool saved;
  const char* if_missing;
  // Its key in a Hugging Face GPT-2 config.json, or nullptr: read on import (a positive number;
  // a file without it means `if_missing`) and written on export, over any fixed value flextp
  // gave that key before (store/hf_gpt2.cpp). A whole-number or real field.
  const char* hf;
};

// Every field of GPTConfig, once, in the run header's order: a new model option is one line here
// (and its use); checkpoints, validation, train's flags and the header follow from this list.
// f(const ConfigField&, field&) is called for each; the field is an int64_t, double, uint64_t,
// std::string or DType.
template <typename Config, typename F>
void for_each_field(Config& c, F&& f) {
  f(ConfigField{"n_layer", "n_layer", true, nullptr, "n_layer"}, c.n_layer);
  f(ConfigField{"n_head", "n_head", true, nullptr, "n_head"}, c.n_head);
  f(ConfigField{"n_embd", "n_embd", true, nullptr, "n_embd"}, c.n_embd);
  // Files before the MLP kinds: GPT-2's. Hugging Face's activation_function: the MLP registry's.
  f(ConfigField{"mlp", "mlp", true, "gelu", nullptr}, c.mlp);
  f(ConfigField{"vocab_size", "vocab", true, nullptr, "vocab_size"}, c.vocab_size);
  f(ConfigField{"n_positions", "n_positions", true, nullptr, "n_positions"}, c.n_positions);
  f(ConfigField{"mlp_unit", nullptr, false, nullptr, nullptr}, c.mlp_unit);
  f(ConfigField{"vocab_unit", nullptr, false, nullptr, nullptr}, c.vocab_unit);
  f(ConfigField{"vocab_pad", nullptr, false, nullptr, nullptr}, c.vocab_pad);
  f(ConfigField{"dropout", nullptr, false, nullptr, nullptr}, c.dropout);
  f(ConfigField{"seed", nullptr, false, nullptr, nullptr}, c.seed);
  f(ConfigField{"dtype", nullptr, false, nullptr, nullptr}, c.dtype);
}

// The saved fields as text, as checkpoints' metadata holds them, and back: `path` names the file
// in errors (a missing field, a value that does not parse).
std::map<std::string, std::string> saved_fields(const GPTConfig& c);
GPTConfig config_of_saved_fields(const std::map<std::string, std::string>& fields, const std::string& path);

// The name of block `layer` ("h.3", as in Hugging Face GPT-2): its parameters' prefix and the
// first part of its unit groups' names.
inline std::string block_name(int64_t layer) { return "h." + std::to_string(layer); }

}  // namespace flextp
