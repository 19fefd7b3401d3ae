#pragma once
// The model a run trains: from the flags for a new run, from the checkpoint for a resumed one
// (--load) or from a Hugging Face directory (--init-from-hf), where flags given explicitly must
// agree with it.
#include <CLI/CLI.hpp>

#include "data/tokenizer.h"
#include "nn/config.h"
#include "train/options.h"

namespace flextp {

// `app` says which flags were given (on the command line or in a --config file).
GPTConfig model_config(const TrainOptions& o, const Tokenizer& tok, const CLI::App& app);

// GPTConfig::validate, its errors naming the flags where it names the settings they set
// (n_embd -> --n-embd): "--n-embd 10 is not divisible by --n-head 4".
void validate_model_flags(const GPTConfig& c);

}  // namespace flextp
