#pragma once
// Hugging Face GPT-2 directories for the import tests, made from a flextp model without Python:
// the export (flextp's names), then renamed as transformers' GPT2LMHeadModel.save_pretrained
// names them ("transformer." prefix), with the causal-mask buffers older transformers saved and
// an lm_head.weight tied to wte.weight.
#include <filesystem>
#include <string>

#include "core/safetensors.h"
#include "store/checkpoint.h"

namespace flextp::test {

inline void write_transformers_dir(GPT& model, const std::string& dir) {
  const std::string flat = dir + ".export";
  export_hf(flat, model);
  SafetensorsFile f = read_safetensors(flat + "/model.safetensors");
  std::vector<std::pair<std::string, Tensor>> renamed;
  for (const auto& [name, t] : f.tensors) renamed.push_back({"transformer." + name, t});
  renamed.push_back({"lm_head.weight", f.tensors.at("wte.weight").clone()});
  int64_t n = model.config().n_positions;
  for (int64_t layer = 0; layer < model.config().n_layer; ++layer) {
    renamed.push_back({"transformer.h." + std::to_string(layer) + ".attn.bias", Tensor::ones({1, 1, n, n}, DType::F32)});
    renamed.push_back({"transformer.h." + std::to_string(layer) + ".attn.masked_bias", Tensor::ones({1}, DType::F32)});
  }
  std::filesystem::create_directories(dir);
  write_safetensors(dir + "/model.safetensors", renamed, {{"format", "pt"}});
  std::filesystem::copy_file(flat + "/config.json", dir + "/config.json");
  std::filesystem::remove_all(flat);
}

}  // namespace flextp::test
