// Importing Hugging Face GPT-2 directories (store/hf_gpt2.h): transformers' names, buffers and tied
// head are read as saved; import then export is bitwise; a config or a file that does not fit is
// named with what is wrong; an export of a GPT-2-vocabulary model carries the tokenizer files.
// (Against transformers itself: tests/hf_transformers.py. At tp > 1: tests/mpi/test_hf_import.cpp.)
#include <doctest/doctest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/autograd.h"
#include "core/safetensors.h"
#include "optim/optimizer.h"
#include "store/checkpoint.h"
#include "store/hf_gpt2.h"
#include "tests/hf_dirs.h"
#include "tests/run_command.h"
#include "tests/small_gpt.h"
#include "tests/temp_dir.h"

using namespace flextp;

namespace {

GPTConfig small() { return test::small_gpt(); }
Tensor ids() { return test::small_gpt_ids(); }

// A model whose biases and layer norms are no longer at their initial zeros and ones.
void train_a_little(GPT& m) {
  AdamW opt({});
  std::vector<Parameter*> params = m.parameters();
  for (int i = 0; i < 3; ++i) {
    m.loss(ids(), ids()).backward();
    opt.step(params, 1e-2);
    for (Parameter* p : params) p->value.zero_grad();
  }
}

std::vector<float> logits_of(GPT& m) {
  NoGradGuard ng;
  return m.logits(ids()).to_vector<float>();
}

nlohmann::json read_json(const std::string& path) { return nlohmann::json::parse(test::read_bytes(path)); }

}  // namespace

TEST_CASE("a transformers-saved GPT-2 directory imports exactly, and import then export is bitwise") {
  test::TempDir dir("hfimport");
  GPT original(small());
  train_a_little(original);
  test::write_transformers_dir(original, dir.file("hf"));
  GPTConfig c = read_hf_config(dir.file("hf"));
  CHECK(c.n_layer == 2);
  CHECK(c.n_head == 2);
  CHECK(c.n_embd == 8);
  CHECK(c.vocab_size == 13);
  CHECK(c.n_positions == 8);
  c.seed = 99;  // another initialisation, which the import replaces (and default unit sizes)
  GPT imported(c);
  CHECK(logits_of(imported) != logits_of(original));
  import_hf(dir.file("hf"), imported);
  CHECK(logits_of(imported) == logits_of(original));
  export_hf(dir.file("reference"), original);
  export_hf(dir.file("again"), imported);
  for (const char* file : {"model.safetensors", "config.json"}) {
    INFO(file);
    CHECK(test::read_bytes(dir.file("again/") + file) == test::read_bytes(dir.file("reference/") + file));
  }
  // flextp's own export (no prefix, no buffers) imports as well.
  GPT from_export(read_hf_config(dir.file("reference")));
  import_hf(dir.file("reference"), from_export);
  CHECK(logits_of(from_export) == logits_of(original));
}

TEST_CASE("an import refuses, naming the file and the problem, configs and weights flextp's GPT cannot take") {
  test::TempDir dir("hfbad");
  GPT m(small());
  test::write_transformers_dir(m, dir.file("good"));
  const nlohmann::json good = read_json(dir.file("good/config.json"));
  auto bad_dir = [&](const std::string& config_text) {
    std::filesystem::remove_all(dir.file("bad"));
    std::filesystem::create_directories(dir.file("bad"));
    dir.write("bad/config.json", config_text);
    return dir.file("bad");
  };
  auto config_fails = [&](const std::string& config_text, const std::string& message) {
    INFO(config_text);
    CHECK_THROWS_WITH_AS(read_hf_config(bad_dir(config_text)), doctest::Contains(message.c_str()), Error);
  };
  auto with = [&](const char* key, const nlohmann::json& value) {
    nlohmann::json j = good;
    j[key] = value;
    return j.dump();
  };
  auto without = [&](const char* key) {
    nlohmann::json j = good;
    j.erase(key);
    return j.dump();
  };
  CHECK_THROWS_WITH_AS(read_hf_config(dir.file("nothing")), doctest::Contains("nothing is not a directory"), Error);
  config_fails("{\"model_type\": ", "config.json is not valid JSON");
  config_fails("[1, 2]", "config.json is not a JSON object");
  config_fails(with("model_type", "llama"), "config.json: model_type is \"llama\"; flextp imports GPT-2 models");
  config_fails(without("model_type"), "config.json: model_type is missing");
  config_fails(without("n_head"), "config.json has no \"n_head\"");
  config_fails(with("n_embd", "8"), "config.json: \"n_embd\" is \"8\", not a positive integer");
  config_fails(with("n_layer", 0), "config.json: \"n_layer\" is 0, not a positive integer");
  config_fails(with("activation_function", "relu"), "activation_function is \"relu\"; flextp's GPT-2 MLP uses the tanh GELU");
  config_fails(with("n_inner", 100), "\"n_inner\" is 100; flextp's GPT has 32 (an MLP of 4 x n_embd neurons)");
  config_fails(with("layer_norm_epsilon", 1e-6), "\"layer_norm_epsilon\" is 1e-06");
  config_fails(with("tie_word_embeddings", false), "\"tie_word_embeddings\" is false; flextp's GPT has true");
  config_fails(with("scale_attn_by_inverse_layer_idx", true), "\"scale_attn_by_inverse_layer_idx\" is true");
  config_fails(with("n_head", 3), "describes a model flextp cannot build: n_embd 8 is not divisible by n_head 3");
  // transformers' defaults that equal flextp's may be left out or null.
  CHECK_NOTHROW(read_hf_config(bad_dir(with("n_inner", nullptr))));
  CHECK_NOTHROW(read_hf_config(bad_dir(without("layer_norm_epsilon"))));

  // Weights: the directory's config builds the model; the file must fit it.
  SafetensorsFile f = read_safetensors(dir.file("good/model.safetensors"));
  auto weights_fail = [&](const std::map<std::string, Tensor>& tensors, const std::string& message) {
    std::filesystem::remove_all(dir.file("w"));
    std::filesystem::create_directories(dir.file("w"));
    std::filesystem::copy_file(dir.file("good/config.json"), dir.file("w/config.json"));
    std::vector<std::pair<std::string, Tensor>> list(tensors.begin(), tensors.end());
    write_safetensors(dir.file("w/model.safetensors"), list);
    GPT target(read_hf_config(dir.file("w")));
    CHECK_THROWS_WITH_AS(import_hf(dir.file("w"), target), doctest::Contains(message.c_str()), Error);
  };
  std::map<std::string, Tensor> t = f.tensors;
  t.erase("transformer.h.1.mlp.c_proj.bias");
  weights_fail(t, "w/model.safetensors: tensor 'h.1.mlp.c_proj.bias' is missing");
  t = f.tensors;
  t["transformer.wpe.weight"] = Tensor::zeros({4, 8});
  weights_fail(t, "tensor 'wpe.weight' has shape [4, 8], the model needs [8, 8]");
  t = f.tensors;
  t["transformer.h.0.attn.c_attn.weight"] = Tensor::zeros({8, 24}, DType::F64);
  weights_fail(t, "tensor 'h.0.attn.c_attn.weight' is f64, the model needs f32");
  t = f.tensors;
  t["transformer.h.0.mlp.extra"] = Tensor::zeros({2});
  weights_fail(t, "unexpected tensor 'h.0.mlp.extra'");
  t = f.tensors;
  t["lm_head.weight"] = Tensor::zeros({13, 8});
  weights_fail(t, "lm_head.weight differs from wte.weight; flextp ties the LM head to the token table");
  t = f.tensors;
  t.erase("transformer.wte.weight");  // the head alone is no token table
  weights_fail(t, "tensor 'wte.weight' is missing");
  t = f.tensors;
  t["wte.weight"] = t.at("transformer.wte.weight");
  weights_fail(t, "holds 'wte.weight' twice");
  std::filesystem::remove(dir.file("w/model.safetensors"));
  dir.write("w/pytorch_model.bin", "pickle");
  GPT target(read_hf_config(dir.file("w")));
  CHECK_THROWS_WITH_AS(import_hf(dir.file("w"), target),
                       doctest::Contains("has no model.safetensors (only pytorch_model.bin, which flextp does not read"),
                       Error);
}

TEST_CASE("an export with GPT-2's tokenizer directory carries vocab.json, merges.txt and a tokenizer config") {
  test::TempDir dir("hftok");
  std::filesystem::create_directories(dir.file("gpt2"));
  dir.write("gpt2/encoder.json", "{\"a\": 0, \"<|endoftext|>\": 1}");
  dir.write("gpt2/vocab.bpe", "#version: 0.2\na b\n");
  GPT m(small());
  export_hf(dir.file("plain"), m);
  CHECK_FALSE(std::filesystem::exists(dir.file("plain/vocab.json")));
  export_hf(dir.file("with"), m, nullptr, dir.file("gpt2"));
  CHECK(test::read_bytes(dir.file("with/vocab.json")) == test::read_bytes(dir.file("gpt2/encoder.json")));
  CHECK(test::read_bytes(dir.file("with/merges.txt")) == test::read_bytes(dir.file("gpt2/vocab.bpe")));
  nlohmann::json config = read_json(dir.file("with/tokenizer_config.json"));
  CHECK(config.at("tokenizer_class") == "GPT2Tokenizer");
  CHECK(config.at("model_max_length") == 8);
  CHECK(config.at("eos_token") == "<|endoftext|>");
  CHECK_THROWS_WITH_AS(export_hf(dir.file("missing"), m, nullptr, dir.file("nowhere")),
                       doctest::Contains(("cannot open data file " + dir.file("nowhere") + "/encoder.json").c_str()), Error);
}

TEST_CASE("train --init-from-hf starts from the directory's weights, at one rank or two, and refuses what does not fit") {
  test::TempDir dir("hfcli");
  std::string data = test::corpus(dir);
  std::string run = " --data " + data + " --seq-len 16 --batch 2 --log-every 100 --eval-every 0 ";
  test::Run trained = test::run_train(std::string(test::kTiny) + " --data " + data + " --steps 20 --lr 3e-3 --export-hf " +
                                      dir.file("trained") + " --metrics " + dir.file("trained.jsonl"));
  REQUIRE_MESSAGE(trained.status == 0, trained.output);
  // Imported and exported again without a step: the same bytes, whatever the unit sizes.
  test::Run again = test::run_train(run + "--steps 0 --mlp-unit 32 --init-from-hf " + dir.file("trained") +
                                    " --export-hf " + dir.file("again"));
  REQUIRE_MESSAGE(again.status == 0, again.output);
  CHECK(test::read_bytes(dir.file("again/model.safetensors")) == test::read_bytes(dir.file("trained/model.safetensors")));
  // Two tensor-parallel ranks import their units and export the same bytes.
  if (test::run_command(test::mpirun() + " --version").status == 0) {
    test::Run tp2 = test::run_command("timeout 300 " + test::mpirun() + " -np 2 -x OMP_NUM_THREADS=1 " +
                                      test::train_binary() + run + "--steps 0 --init-from-hf " + dir.file("trained") +
                                      " --export-hf " + dir.file("tp2"));
    INFO(tp2.output);
    REQUIRE(tp2.status == 0);
    CHECK(test::read_bytes(dir.file("tp2/model.safetensors")) == test::read_bytes(dir.file("trained/model.safetensors")));
  }
  // Fine-tuning starts where the trained model was, far below a new model's first loss.
  test::Run tuned = test::run_train(run + "--steps 2 --init-from-hf " + dir.file("trained") + " --metrics " +
                                    dir.file("tuned.jsonl"));
  REQUIRE_MESSAGE(tuned.status == 0, tuned.output);
  double first_trained = test::read_metrics(dir.file("trained.jsonl")).front()["loss"].get<double>();
  double last_trained = test::read_metrics(dir.file("trained.jsonl")).back()["loss"].get<double>();
  double first_tuned = test::read_metrics(dir.file("tuned.jsonl")).front()["loss"].get<double>();
  INFO("first loss of the trained run ", first_trained, ", its last ", last_trained, ", the fine-tune's first ", first_tuned);
  CHECK(first_tuned < first_trained - 0.5 * (first_trained - last_trained));

  auto fails_with = [&](const std::string& args, const std::string& message) {
    test::Run r = test::run_train(run + args);
    INFO(args, "\n", r.output);
    CHECK(r.status == 1);
    CHECK(r.output.find(message) != std::string::npos);
  };
  fails_with("--init-from-hf " + dir.file("nowhere"), "train: error: --init-from-hf: " + dir.file("nowhere") + " is not a directory");
  fails_with("--init-from-hf " + dir.file("trained") + " --n-embd 32 --n-head 2",
             "--n-embd 32 differs from the 16 of checkpoint " + dir.file("trained"));
  fails_with("--init-from-hf " + dir.file("trained") + " --load " + dir.file("trained/model.safetensors"),
             "--load and --init-from-hf exclude each other");
  nlohmann::json gpt2_sized = read_json(dir.file("trained/config.json"));
  gpt2_sized["vocab_size"] = 50257;
  std::filesystem::create_directories(dir.file("gpt2-sized"));
  dir.write("gpt2-sized/config.json", gpt2_sized.dump());
  fails_with("--init-from-hf " + dir.file("gpt2-sized"), "has GPT-2's vocabulary (50257 tokens): train it with --tokenizer gpt2");
  nlohmann::json small_vocab = read_json(dir.file("trained/config.json"));
  small_vocab["vocab_size"] = 100;
  std::filesystem::create_directories(dir.file("small-vocab"));
  dir.write("small-vocab/config.json", small_vocab.dump());
  fails_with("--init-from-hf " + dir.file("small-vocab"), "has a vocabulary of 100 tokens, fewer than the 256 of --tokenizer byte");
  std::filesystem::create_directories(dir.file("no-weights"));
  dir.write("no-weights/config.json", test::read_bytes(dir.file("trained/config.json")));
  fails_with("--init-from-hf " + dir.file("no-weights"), "--init-from-hf: " + dir.file("no-weights") + " has no model.safetensors");
}
