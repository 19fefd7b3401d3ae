#include "train/input_fingerprints.h"

#include <set>
#include <sstream>
#include <string>

namespace flextp {

std::vector<Fingerprint> input_fingerprints(const TrainOptions& o, const CLI::App& app, const Tokenizer& tok,
                                            const GPTConfig& c, const Corpus& corpus, const TrainState& loaded) {
  uint64_t vocabulary = fingerprint(tok.name());
  for (int32_t id = 0; id < tok.vocab_size(); ++id) {
    std::string piece = tok.decode({id});
    vocabulary = fingerprint(std::to_string(piece.size()) + ":" + piece, vocabulary);
  }
  static const std::set<std::string> own = {"data",    "val-data",      "load",   "save",          "metrics", "export-hf",
                                            "config",  "tokenizer-dir", "device", "straggler-trace"};
  std::stringstream flags(app.config_to_str(true, false));
  std::string settings = c.str() + ", seed " + std::to_string(o.seed) + "\n";
  for (std::string line; std::getline(flags, line);)
    if (own.count(line.substr(0, line.find('='))) == 0) settings += line + "\n";
  const std::vector<int32_t>& train = corpus.train;
  const std::vector<int32_t>& val = corpus.val;
  return {{"the training data", fingerprint(train.data(), train.size() * sizeof(int32_t))},
          {"the validation data", fingerprint(val.data(), val.size() * sizeof(int32_t))},
          {"the vocabulary", vocabulary},
          {"the configuration (model and flags)", fingerprint(settings)},
          {"the step of the loaded checkpoint", fingerprint(std::to_string(loaded.step))},
          {"the loaded checkpoint (its run and save ids)", fingerprint(loaded.run_id + "/" + loaded.save_id)}};
}

}  // namespace flextp
