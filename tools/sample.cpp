// flextp-sample: text from a model's weights alone (no optimizer state): a flextp checkpoint,
// an --export-hf model.safetensors, or a Hugging Face GPT-2 directory (config.json +
// model.safetensors). The same sampler as `train --sample` (nn/generate.h); the same seed gives
// the same text.
//   flextp-sample --load runs/default/model.safetensors --prompt "Q: " --tokens 200 --seed 7
//   flextp-sample --load runs/gpt2-export --tokenizer gpt2 --temperature 0   (greedy)
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <map>

#include "core/error.h"
#include "store/checkpoint.h"
#include "nn/generate.h"
#include "store/hf_gpt2.h"
#include "core/parse_flags.h"
#include "data/tokenizer.h"

using namespace flextp;

int main(int argc, char** argv) {
  CLI::App app{"flextp-sample: text from a checkpoint's weights, seeded"};
  std::string load, prompt = "\n", tokenizer, tokenizer_dir;
  SampleOptions s{200, 0.8, 40, 1337};
  app.add_option("--load", load, "weights: a checkpoint file, or a Hugging Face GPT-2 directory")->required();
  app.add_option("--prompt", prompt, "text the sample continues (default: a newline)");
  app.add_option("--tokens", s.tokens, "tokens to generate")->check(at_least_zero())->capture_default_str();
  app.add_option("--temperature", s.temperature, "sampling temperature (0: greedy)")
      ->check(at_least_zero())
      ->capture_default_str();
  app.add_option("--top-k", s.top_k, "sample among the k likeliest (0: all)")
      ->check(at_least_zero())
      ->capture_default_str();
  app.add_option("--seed", s.seed, "seed of the sampling")->capture_default_str();
  app.add_option("--tokenizer", tokenizer,
                 "byte or gpt2 (default: the one the checkpoint was trained with; else gpt2 for GPT-2's 50257 "
                 "tokens, byte otherwise)")
      ->check(CLI::IsMember({"byte", "gpt2"}));
  app.add_option("--tokenizer-dir", tokenizer_dir,
                 "--tokenizer gpt2: directory holding encoder.json and vocab.bpe (default: the cache that "
                 "scripts/get_gpt2_tokenizer.py fills)");
  if (std::optional<int> status = parse_flags(app, argc, argv, "flextp-sample")) return *status;
  try {
    const bool hf_dir = std::filesystem::is_directory(load);
    std::unique_ptr<GPT> loaded = load_weights_only(load);
    GPT& model = *loaded;
    const GPTConfig& c = model.config();
    if (tokenizer.empty()) {
      std::map<std::string, std::string> extra = hf_dir ? std::map<std::string, std::string>{} : read_checkpoint_extra(load);
      auto recorded = extra.find("tokenizer");
      tokenizer = recorded != extra.end() ? recorded->second : c.vocab_size == 50257 ? "gpt2" : "byte";
    }
    std::unique_ptr<Tokenizer> tok = tokenizer_from_flags(tokenizer, tokenizer_dir);
    FLEXTP_CHECK(tok->vocab_size() <= c.vocab_size, "--tokenizer ", tokenizer, " has ", tok->vocab_size(),
                 " tokens, more than the model's vocabulary of ", c.vocab_size);
    std::vector<int32_t> ids = tok->encode(prompt.empty() ? "\n" : prompt);
    std::vector<int32_t> out = generate(model, ids, s);
    std::string text = tok->decode(out);
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::printf("\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "flextp-sample: error: %s\n", e.what());
    return 1;
  }
}
