// Sampling: the sampler draws from softmax(logits / temperature) among the top k; flextp-sample
// reads weights alone (no optimizer state) and is deterministic for a seed, with top-k 1 being
// greedy; train --sample-every prints samples during training without changing the training.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>

#include "data/tokenizer.h"
#include "nn/generate.h"
#include "store/checkpoint.h"
#include "tests/run_command.h"
#include "tests/temp_dir.h"

using namespace flextp;
using test::kTiny;
using test::run_train;

namespace {
test::Run sample(const std::string& args) { return test::run_command(std::string(FLEXTP_SAMPLE_BINARY) + " " + args); }

// What the tool printed for these flags; fails the test when it failed.
std::string text_of(const std::string& args) {
  test::Run r = sample(args);
  INFO(args, "\n", r.output);
  CHECK(r.status == 0);
  return r.output;
}
}  // namespace

TEST_CASE("the sampler draws from softmax(logits / temperature) among the k likeliest, the argmax at temperature 0") {
  const std::vector<double> logits{1.0, 3.0, 0.0, 2.0};
  const int draws = 20000;
  for (double temperature : {0.5, 1.0, 2.0})
    for (int64_t top_k : {0, 2}) {
      CAPTURE(temperature);
      CAPTURE(top_k);
      // The top 2 are ids 1 and 3.
      std::vector<double> p(logits.size());
      double z = 0;
      for (size_t i = 0; i < p.size(); ++i)
        if (top_k == 0 || i == 1 || i == 3) z += p[i] = std::exp(logits[i] / temperature);
      std::vector<int> count(logits.size());
      for (int d = 0; d < draws; ++d) ++count.at(sample_token(logits, {1, temperature, top_k, 7}, d));
      // Each frequency within 5 standard deviations of its probability (the draws are seeded: the
      // same every run); ignoring the temperature puts id 1 at 0.64 instead of 0.87 at 0.5.
      for (size_t i = 0; i < p.size(); ++i) {
        const double expected = p[i] / z, seen = double(count[i]) / draws;
        CAPTURE(i);
        CHECK(std::abs(seen - expected) <= 5 * std::sqrt(expected * (1 - expected) / draws));
      }
    }
  for (int d = 0; d < 100; ++d) CHECK(sample_token(logits, {1, 0.0, 0, 7}, d) == 1);
}

TEST_CASE("flextp-sample: weights alone, the same seed gives the same text, another seed another, top-k 1 is greedy") {
  test::TempDir dir("sample");
  std::string model = dir.file("m.safetensors");
  test::Run trained = run_train(std::string(kTiny) + " --data " + test::corpus(dir) + " --steps 30 --lr 3e-3 --save " +
                                model + " --export-hf " + dir.file("hf"));
  REQUIRE_MESSAGE(trained.status == 0, trained.output);
  std::filesystem::remove(model + ".state");  // the weights alone
  const std::string load = "--load " + model + " --prompt 'the quick ' --tokens 48 ";
  std::string first = text_of(load + "--seed 1");
  CHECK(first.rfind("the quick ", 0) == 0);
  CHECK(first.size() == std::string("the quick ").size() + 48 + 1);  // bytes, and a newline
  CHECK(text_of(load + "--seed 1") == first);
  CHECK(text_of(load + "--seed 2") != first);
  CHECK(text_of(load + "--seed 1 --temperature 0.8") == first);  // the default
  CHECK(text_of(load + "--seed 1 --temperature 2") != first);
  std::string greedy = text_of(load + "--temperature 0 --seed 1");
  CHECK(text_of(load + "--top-k 1 --seed 2") == greedy);
  CHECK(greedy != first);
  // Greedy is the argmax at every step: the library's sampler at temperature 0 on the same weights.
  GPT m(read_checkpoint_config(model));
  load_checkpoint(model, m, nullptr);
  ByteTokenizer bytes;
  CHECK(greedy == bytes.decode(generate(m, bytes.encode("the quick "), {48, 0.0, 0, 5})) + "\n");
  // The Hugging Face export: as a directory and as its weights file, the same model.
  CHECK(text_of("--load " + dir.file("hf") + " --prompt 'the quick ' --tokens 48 --seed 1") == first);
  CHECK(text_of("--load " + dir.file("hf/model.safetensors") + " --prompt 'the quick ' --tokens 48 --seed 1") == first);

  auto fails_with = [&](const std::string& args, const std::string& message) {
    test::Run r = sample(args);
    INFO(args, "\n", r.output);
    CHECK(r.status == 1);
    CHECK(r.output.find(message) != std::string::npos);
  };
  fails_with("--prompt x", "flextp-sample: error: --load is required");
  fails_with("--load " + dir.file("none.safetensors"), "flextp-sample: error: cannot open checkpoint file");
  fails_with("--load " + dir.file(""), "flextp-sample: error: ");  // a directory without config.json
  fails_with("--load " + model + " --temperature -1", "--temperature");
  if (std::filesystem::exists(FLEXTP_SOURCE_DIR "/../shared/gpt2/vocab.bpe"))
    fails_with("--load " + model + " --tokenizer gpt2 --tokenizer-dir " FLEXTP_SOURCE_DIR "/../shared/gpt2",
               "--tokenizer gpt2 has 50257 tokens, more than the model's vocabulary of 256");
}

TEST_CASE("flextp-sample takes the tokenizer the checkpoint records, its files from --tokenizer-dir or the cache") {
  const std::string gpt2 = FLEXTP_SOURCE_DIR "/../shared/gpt2";
  if (!std::filesystem::exists(gpt2 + "/vocab.bpe")) return;
  test::TempDir dir("sample-gpt2");
  std::string model = dir.file("g.safetensors");
  test::Run trained = run_train(std::string(kTiny) + " --data " + test::corpus(dir) + " --steps 1 --tokenizer gpt2 " +
                                "--tokenizer-dir " + gpt2 + " --save " + model);
  REQUIRE_MESSAGE(trained.status == 0, trained.output);
  test::ScopedEnv empty_cache("XDG_CACHE_HOME", dir.file("no-cache"));
  test::Run r = sample("--load " + model + " --tokens 4");
  INFO(r.output);
  CHECK(r.status == 1);
  CHECK(r.output.find("--tokenizer gpt2: GPT-2's encoder.json and vocab.bpe are not in the cache directory") !=
        std::string::npos);
  std::string text = text_of("--load " + model + " --tokens 4 --prompt ' jumps over' --tokenizer-dir " + gpt2);
  CHECK(text.rfind(" jumps over", 0) == 0);
  CHECK(text.size() > std::string(" jumps over").size() + 1);
}

TEST_CASE("train --sample-every prints samples during training and leaves the losses as they were (dropout on)") {
  test::TempDir dir("sample-every");
  std::string base = std::string(kTiny) + " --data " + test::corpus(dir) + " --steps 6 --dropout 0.2 --metrics ";
  test::Run plain = run_train(base + dir.file("plain.jsonl"));
  REQUIRE_MESSAGE(plain.status == 0, plain.output);
  test::Run sampled = run_train(base + dir.file("sampled.jsonl") + " --sample-every 2 --sample 12 --prompt 'the '");
  INFO(sampled.output);
  REQUIRE(sampled.status == 0);
  CHECK(sampled.output.find("---- sample at step 2 ----\nthe ") != std::string::npos);
  CHECK(sampled.output.find("---- sample at step 4 ----") != std::string::npos);
  CHECK(sampled.output.find("---- sample at step 6 ----") == std::string::npos);  // the last step: the final sample
  CHECK(sampled.output.find("---- sample ----\nthe ") != std::string::npos);
  std::vector<nlohmann::json> a = test::read_metrics(dir.file("plain.jsonl")), b = test::read_metrics(dir.file("sampled.jsonl"));
  REQUIRE(a.size() == 6);
  REQUIRE(b.size() == 6);
  for (size_t i = 0; i < a.size(); ++i) CHECK(b[i]["loss"] == a[i]["loss"]);
}
