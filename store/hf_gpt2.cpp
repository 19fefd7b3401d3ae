#include "store/hf_gpt2.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <type_traits>

#include "core/safetensors.h"
#include "core/text_fields.h"
#include "data/token_files.h"
#include "store/checkpoint.h"

namespace flextp {
namespace {

// A key of config.json that a GPTConfig field carries (ConfigField::hf): a positive number, a
// whole one for a whole-number field. A file without it means the field's `if_missing` (the
// behaviour from before the field: GPT-2's, transformers' default), or is refused.
template <typename T>
T positive(const nlohmann::json& j, const std::string& path, const ConfigField& f) {
  T v{};
  if (!j.contains(f.hf) && f.if_missing && value_from_text(f.if_missing, v)) return v;
  FLEXTP_CHECK(j.contains(f.hf), path, " has no \"", f.hf, "\"");
  const nlohmann::json& x = j.at(f.hf);
  constexpr bool whole = std::is_integral_v<T>;
  FLEXTP_CHECK(x.is_number() && (!whole || x.is_number_integer()) && x.get<T>() > 0, path, ": \"", f.hf, "\" is ",
               x.dump(), whole ? ", not a positive integer" : ", not a positive number");
  return x.get<T>();
}

// Whether a GPTConfig field carries Hugging Face key `key`: then the field, not a fixed value, is
// what the file gives (read with the other fields; export_hf writes it over the fixed value).
bool carried_by_field(const char* key) {
  bool carried = false;
  GPTConfig c;
  for_each_field(c, [&](const ConfigField& f, const auto&) { carried |= f.hf && std::strcmp(f.hf, key) == 0; });
  return carried;
}

// A setting flextp's GPT has fixed: the file may leave it out (transformers' default is flextp's)
// or give flextp's value. A key a GPTConfig field carries is not fixed.
template <typename T>
void fixed(const nlohmann::json& j, const std::string& path, const char* key, const T& ours, const char* why) {
  if (!j.contains(key) || j.at(key).is_null() || carried_by_field(key)) return;
  bool same = false;
  try {
    if constexpr (std::is_floating_point_v<T>)
      same = std::abs(j.at(key).get<double>() - ours) <= 1e-12;
    else
      same = j.at(key).get<T>() == ours;
  } catch (const nlohmann::json::exception&) {
  }
  FLEXTP_CHECK(same, path, ": \"", key, "\" is ", j.at(key).dump(), "; flextp's GPT has ", nlohmann::json(ours).dump(),
               " (", why, ")");
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

GPTConfig read_hf_config(const std::string& dir) {
  const std::string path = dir + "/config.json";
  FLEXTP_CHECK(std::filesystem::is_directory(dir), dir, " is not a directory (a Hugging Face model directory holds "
               "config.json and model.safetensors)");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_text_file(path));
  } catch (const nlohmann::json::parse_error& e) {
    FLEXTP_FAIL(path, " is not valid JSON: ", e.what());
  }
  FLEXTP_CHECK(j.is_object(), path, " is not a JSON object");
  FLEXTP_CHECK(j.value("model_type", std::string()) == "gpt2", path, ": model_type is ",
               j.contains("model_type") ? j.at("model_type").dump() : std::string("missing"),
               "; flextp imports GPT-2 models (\"gpt2\")");
  GPTConfig c;
  for_each_field(c, [&](const ConfigField& f, auto& value) {
    using T = std::decay_t<decltype(value)>;
    if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, double>)
      if (f.hf) value = positive<T>(j, path, f);
  });
  c.mlp = "gelu";
  if (j.contains("activation_function")) {
    const nlohmann::json& a = j.at("activation_function");
    FLEXTP_CHECK(a == "gelu_new" || a == "gelu_pytorch_tanh", path, ": activation_function is ", a.dump(),
                 "; flextp's GPT-2 MLP uses the tanh GELU (\"gelu_new\")");
  }
  fixed(j, path, "n_inner", c.mlp_hidden(), "an MLP of 4 x n_embd neurons");
  fixed(j, path, "layer_norm_epsilon", 1e-5, "its layer norms' epsilon");
  fixed(j, path, "tie_word_embeddings", true, "the LM head is the token table");
  fixed(j, path, "scale_attn_weights", true, "attention scores scaled by 1/sqrt(head size)");
  fixed(j, path, "scale_attn_by_inverse_layer_idx", false, "no per-layer attention scaling");
  try {
    c.validate();
  } catch (const Error& e) {
    FLEXTP_FAIL(path, " describes a model flextp cannot build: ", e.what());
  }
  return c;
}

void import_hf(const std::string& dir, GPT& model) {
  const std::string path = dir + "/model.safetensors";
  FLEXTP_CHECK(std::filesystem::is_regular_file(path), dir, " has no model.safetensors",
               std::filesystem::exists(dir + "/pytorch_model.bin")
                   ? " (only pytorch_model.bin, which flextp does not read: save it with safe_serialization=True)"
                   : "");
  SafetensorsFile hf = read_safetensors(path);
  SafetensorsFile ours;
  const std::regex mask_buffer(R"(h\.[0-9]+\.attn\.(bias|masked_bias))");
  std::optional<Tensor> lm_head;
  for (auto& [stored, tensor] : hf.tensors) {
    std::string name = starts_with(stored, "transformer.") ? stored.substr(12) : stored;
    if (std::regex_match(name, mask_buffer)) continue;
    if (name == "lm_head.weight") {
      lm_head = tensor;
      continue;
    }
    FLEXTP_CHECK(ours.tensors.emplace(name, tensor).second, path, " holds '", name, "' twice (with and without the "
                 "transformer. prefix)");
  }
  auto wte = ours.tensors.find("wte.weight");
  if (lm_head && wte != ours.tensors.end()) {  // (without wte.weight, loading names it missing)
    bool tied = wte->second.shape() == lm_head->shape() &&
                wte->second.dtype() == lm_head->dtype() &&
                std::memcmp(wte->second.raw(), lm_head->raw(), lm_head->nbytes()) == 0;
    FLEXTP_CHECK(tied, path, ": lm_head.weight differs from wte.weight; flextp ties the LM head to the token table");
  }
  load_weights(ours, path, model);
}

void write_hf_gpt2_tokenizer(const std::string& dir, const std::string& gpt2_dir, int64_t n_positions) {
  write_file_atomic(dir + "/vocab.json", read_text_file(gpt2_dir + "/encoder.json"));
  write_file_atomic(dir + "/merges.txt", read_text_file(gpt2_dir + "/vocab.bpe"));
  const std::string end = "<|endoftext|>";
  nlohmann::json config = {{"tokenizer_class", "GPT2Tokenizer"},
                           {"model_max_length", n_positions},
                           {"bos_token", end},
                           {"eos_token", end},
                           {"unk_token", end},
                           {"add_prefix_space", false}};
  write_file_atomic(dir + "/tokenizer_config.json", config.dump(2) + "\n");
}

std::unique_ptr<GPT> load_weights_only(const std::string& path) {
  const bool hf_dir = std::filesystem::is_directory(path);
  auto model = std::make_unique<GPT>(hf_dir ? read_hf_config(path) : read_checkpoint_config(path));
  if (hf_dir)
    import_hf(path, *model);
  else
    load_checkpoint(path, *model, nullptr);
  return model;
}

}  // namespace flextp
