#pragma once
// Hugging Face GPT-2 directories, the other way than export_hf (store/checkpoint.h): reading one
// that transformers saved (config.json + model.safetensors, e.g. GPT2LMHeadModel.save_pretrained
// or a download of "gpt2") into a flextp model at any partition, to train or fine-tune from; and
// the tokenizer files an export of a GPT-2-vocabulary model carries.
#include <memory>
#include <string>

#include "nn/gpt.h"

namespace flextp {

// The model shape DIR/config.json describes (layers, heads, channels, vocabulary, positions), the
// other settings left at GPTConfig's defaults. Refuses what flextp's GPT is not: another
// model_type, activation, MLP width, layer-norm epsilon, untied LM head or attention scaling.
GPTConfig read_hf_config(const std::string& dir);

// Loads DIR/model.safetensors into `model` (built from read_hf_config(dir), at any partition: each
// rank takes its units' rows). Names may carry transformers' "transformer." prefix; the causal-mask
// buffers older transformers saved (h.N.attn.bias, h.N.attn.masked_bias) are ignored, and an
// lm_head.weight must equal wte.weight (flextp ties them). Every weight must be there, f32, with
// GPT-2's shape.
void import_hf(const std::string& dir, GPT& model);

// The weights alone (no optimizer state) of a flextp checkpoint or, when `path` is a directory, of
// a Hugging Face GPT-2 directory, in a model of one process built to their shape.
std::unique_ptr<GPT> load_weights_only(const std::string& path);

// DIR/vocab.json and DIR/merges.txt (GPT-2's encoder.json and vocab.bpe from `gpt2_dir`, as they
// are) and DIR/tokenizer_config.json, which transformers' GPT2Tokenizer (and AutoTokenizer) load.
void write_hf_gpt2_tokenizer(const std::string& dir, const std::string& gpt2_dir, int64_t n_positions);

}  // namespace flextp
