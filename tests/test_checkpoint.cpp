// Model checkpoints: Hugging Face names and layouts, exact save/load, and refusal of files that do
// not fit the model.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sys/wait.h>
#include <unistd.h>

#include "core/autograd.h"
#include "core/safetensors.h"
#include "store/checkpoint.h"
#include "store/checkpoint_files.h"
#include "tests/gradcheck.h"
#include "tests/small_gpt.h"
#include "tests/temp_dir.h"

using namespace flextp;

namespace {
GPTConfig small() { return test::small_gpt(); }
Tensor ids() { return test::small_gpt_ids(); }
using test::train_a_little;
// Every parameter of b holds a's value and AdamW state (m and v) exactly.
void check_same_parameters(GPT& a, GPT& b) {
  std::vector<Parameter*> pa = a.parameters(), pb = b.parameters();
  REQUIRE(pa.size() == pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    INFO(pa[i]->name);
    CHECK(pa[i]->value.to_vector<float>() == pb[i]->value.to_vector<float>());
    CHECK(pa[i]->state.at("m").to_vector<float>() == pb[i]->state.at("m").to_vector<float>());
    CHECK(pa[i]->state.at("v").to_vector<float>() == pb[i]->state.at("v").to_vector<float>());
  }
}
}  // namespace

TEST_CASE("checkpoints use Hugging Face GPT-2 names and Conv1D shapes") {
  test::TempDir dir("ckname");
  GPT m(small());
  save_checkpoint(dir.file("m.safetensors"), m, nullptr, {3, 1, {}});
  SafetensorsFile f = read_safetensors(dir.file("m.safetensors"));
  CHECK(f.tensors.at("wte.weight").shape() == Shape{13, 8});
  CHECK(f.tensors.at("wpe.weight").shape() == Shape{8, 8});
  CHECK(f.tensors.at("h.1.attn.c_attn.weight").shape() == Shape{8, 24});
  CHECK(f.tensors.at("h.1.attn.c_attn.bias").shape() == Shape{24});
  CHECK(f.tensors.at("h.0.attn.c_proj.weight").shape() == Shape{8, 8});
  CHECK(f.tensors.at("h.0.mlp.c_fc.weight").shape() == Shape{8, 32});
  CHECK(f.tensors.at("h.0.mlp.c_proj.weight").shape() == Shape{32, 8});
  CHECK(f.tensors.at("ln_f.bias").shape() == Shape{8});
  CHECK(f.tensors.size() == 2 + 2 * 12 + 2);
  CHECK(f.metadata.at("n_layer") == "2");
  CHECK(f.metadata.at("step") == "3");
  // Hugging Face's c_attn columns are [all q | all k | all v]; flextp's rows are per head.
  // Column s*C + h*D + i of HF is row h*3D + s*D + i here (C = 8, D = 4).
  std::vector<float> ours = m.blocks()[1]->attn.c_attn.weight.value.to_vector<float>();
  std::vector<float> hf = f.tensors.at("h.1.attn.c_attn.weight").to_vector<float>();
  for (int h = 0; h < 2; ++h)
    for (int s = 0; s < 3; ++s)
      for (int i = 0; i < 4; ++i)
        for (int in = 0; in < 8; ++in)
          CHECK(hf[in * 24 + s * 8 + h * 4 + i] == ours[(h * 12 + s * 4 + i) * 8 + in]);
}

TEST_CASE("save then load gives identical logits and optimizer state") {
  test::TempDir dir("ckrt");
  GPT a(small());
  AdamW oa({0.9, 0.999, 1e-8, 0.1});
  train_a_little(a, oa, 3);
  save_checkpoint(dir.file("m.safetensors"), a, &oa, {3, 42, {{"tokenizer", "byte"}}});

  GPTConfig other = small();
  other.seed = 999;  // a different initialisation, overwritten by the load
  GPT b(other);
  AdamW ob({0.9, 0.999, 1e-8, 0.1});
  TrainState st = load_checkpoint(dir.file("m.safetensors"), b, &ob);
  CHECK(st.step == 3);
  CHECK(st.seed == 42);
  CHECK(st.extra.at("tokenizer") == "byte");
  CHECK(ob.steps_taken() == 3);
  NoGradGuard ng;
  CHECK(a.logits(ids()).to_vector<float>() == b.logits(ids()).to_vector<float>());
  check_same_parameters(a, b);
}

TEST_CASE("the seed of a checkpoint reads back over the whole unsigned range, from its state only") {
  test::TempDir dir("ckseed");
  GPT m(small());
  AdamW opt({});
  const uint64_t seed = 18446744073709551615ull;  // above INT64_MAX
  save_checkpoint(dir.file("m.st"), m, &opt, {2, seed, {}});
  CHECK(read_checkpoint_seed(dir.file("m.st")) == seed);
  CHECK(load_checkpoint(dir.file("m.st"), m, &opt).seed == seed);
  save_checkpoint(dir.file("w.st"), m, nullptr, {2, seed, {}});  // weights alone: no seed to tell
  CHECK(!read_checkpoint_seed(dir.file("w.st")).has_value());
}

TEST_CASE("weights and optimizer state of different saves are refused, naming both; a save's own pair loads") {
  test::TempDir dir("ckrunid");
  GPT m(small());
  AdamW opt({});
  train_a_little(m, opt, 1);
  const std::string a = dir.file("a.st"), b = dir.file("b.st");
  save_checkpoint(a, m, &opt, {3, 7, {}, "1111111111111111"});
  save_checkpoint(b, m, &opt, {3, 7, {}, "2222222222222222"});
  std::map<std::string, std::string> meta = read_safetensors_metadata(a);
  CHECK(meta.at("run_id") == "1111111111111111");
  CHECK(read_safetensors(a + ".state").metadata.at("save_id") == meta.at("save_id"));
  TrainState back = load_checkpoint(a, m, &opt);
  CHECK(back.run_id == "1111111111111111");
  CHECK(back.save_id == meta.at("save_id"));

  // Another run's state of the same step, over a's: refused, the two files and ids named.
  std::filesystem::copy_file(b + ".state", a + ".state", std::filesystem::copy_options::overwrite_existing);
  const std::string names_both = a + ".state (step 3, run 2222222222222222, save " +
                                 read_safetensors_metadata(b).at("save_id") + ") does not belong to " + a +
                                 " (step 3, run 1111111111111111, save " + meta.at("save_id") + ")";
  CHECK_THROWS_WITH_AS(load_checkpoint(a, m, &opt), doctest::Contains(names_both.c_str()), Error);
  CHECK_FALSE(read_checkpoint_seed(a).has_value());
  // The same run's state of another save at the same step (a second save of step 3) too.
  save_checkpoint(b, m, &opt, {3, 7, {}, "1111111111111111"});
  std::filesystem::copy_file(b + ".state", a + ".state", std::filesystem::copy_options::overwrite_existing);
  const std::string not_a = "does not belong to " + a;
  CHECK_THROWS_WITH_AS(load_checkpoint(a, m, &opt), doctest::Contains(not_a.c_str()), Error);
  // A state that belongs is found in a.st.state.next too (a save interrupted between its renames).
  save_checkpoint(a, m, &opt, {3, 7, {}, "1111111111111111"});
  std::filesystem::rename(a + ".state", a + ".state.next");
  std::filesystem::copy_file(b + ".state", a + ".state", std::filesystem::copy_options::overwrite_existing);
  CHECK(load_checkpoint(a, m, &opt).save_id == read_safetensors_metadata(a).at("save_id"));
}

TEST_CASE("loading refuses checkpoints that do not fit the model") {
  test::TempDir dir("ckbad");
  GPT m(small());
  AdamW opt({});
  std::string path = dir.file("m.safetensors");
  save_checkpoint(path, m, &opt, {5, 1, {}});

  GPTConfig wider = small();
  wider.n_embd = 16;
  GPT w(wider);
  CHECK_THROWS_WITH_AS(load_checkpoint(path, w, nullptr),
                       doctest::Contains("checkpoint has n_embd 8 but the model was built with 16"), Error);

  SafetensorsFile f = read_safetensors(path);
  auto rewrite = [&](const std::map<std::string, Tensor>& tensors) {
    std::vector<std::pair<std::string, Tensor>> list(tensors.begin(), tensors.end());
    write_safetensors(dir.file("x.safetensors"), list, f.metadata);
    return dir.file("x.safetensors");
  };
  auto missing = f.tensors;
  missing.erase("h.1.mlp.c_fc.bias");
  CHECK_THROWS_WITH_AS(load_checkpoint(rewrite(missing), m, nullptr),
                       doctest::Contains("tensor 'h.1.mlp.c_fc.bias' is missing"), Error);
  auto extra = f.tensors;
  extra["h.9.attn.c_attn.weight"] = Tensor::zeros({1});
  CHECK_THROWS_WITH_AS(load_checkpoint(rewrite(extra), m, nullptr),
                       doctest::Contains("unexpected tensor 'h.9.attn.c_attn.weight'"), Error);
  auto shape = f.tensors;
  shape["ln_f.weight"] = Tensor::zeros({9});
  CHECK_THROWS_WITH_AS(load_checkpoint(rewrite(shape), m, nullptr),
                       doctest::Contains("'ln_f.weight' has shape [9], the model needs [8]"), Error);
  auto dtype = f.tensors;
  dtype["ln_f.weight"] = Tensor::zeros({8}, DType::F64);
  CHECK_THROWS_WITH_AS(load_checkpoint(rewrite(dtype), m, nullptr),
                       doctest::Contains("'ln_f.weight' is f64, the model needs f32"), Error);

  // Weights from another step than the optimizer state: an interrupted save.
  save_checkpoint(dir.file("y.safetensors"), m, nullptr, {6, 1, {}});
  std::filesystem::copy_file(path + ".state", dir.file("y.safetensors.state"));
  CHECK_THROWS_WITH_AS(load_checkpoint(dir.file("y.safetensors"), m, &opt),
                       doctest::Contains("inconsistent"), Error);
  SGD sgd({});
  CHECK_THROWS_WITH_AS(load_checkpoint(path, m, &sgd), doctest::Contains("holds adamw state"), Error);
}

TEST_CASE("--keep-last prunes its run's periodic checkpoints by step, past step 999,999 too") {
  test::TempDir dir("ckprune");
  std::string path = dir.file("k.st");
  CHECK(periodic_checkpoint_path(path, 7) == dir.file("k-step000007.st"));
  CHECK(periodic_checkpoint_path(path, 1234567) == dir.file("k-step1234567.st"));
  // Checkpoints of run "r1" (their weights' metadata alone), with their optimizer state.
  for (int64_t step : {2, 999999, 1000000, 10000000, 1000001}) {
    write_safetensors(periodic_checkpoint_path(path, step), {}, {{"step", std::to_string(step)}, {"run_id", "r1"}});
    dir.write(periodic_checkpoint_path(path, step).substr(dir.path.string().size() + 1) + ".state", "s");
  }
  for (const char* other : {"k.st", "k-step12.st", "k-stepx00001.st", "j-step000003.st", "k-step000004.st.tmp.1"})
    dir.write(other, "x");
  CHECK(periodic_checkpoints(path) == std::vector<std::string>{dir.file("k-step000002.st"), dir.file("k-step999999.st"),
                                                               dir.file("k-step1000000.st"), dir.file("k-step1000001.st"),
                                                               dir.file("k-step10000000.st")});
  remove_old_checkpoints(path, 2, "r1", 10000000);
  std::vector<std::string> left;
  for (const auto& e : std::filesystem::directory_iterator(dir.path)) left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  CHECK(left == std::vector<std::string>{"j-step000003.st", "k-step000004.st.tmp.1", "k-step10000000.st",
                                         "k-step10000000.st.state", "k-step1000001.st", "k-step1000001.st.state",
                                         "k-step12.st", "k-stepx00001.st", "k.st"});
}

TEST_CASE("--keep-last removes only its own run's checkpoints, and none past the step it just wrote") {
  test::TempDir dir("ckpruneown");
  std::string path = dir.file("m.st");
  auto checkpoint = [&](int64_t step, const std::string& run) {
    write_safetensors(periodic_checkpoint_path(path, step), {}, {{"step", std::to_string(step)}, {"run_id", run}});
  };
  checkpoint(3, "old"), checkpoint(1000, "old");  // an older run's, in the same directory
  for (int64_t step : {5, 10, 15, 20, 25}) checkpoint(step, "new");
  checkpoint(30, "new");  // of an earlier attempt of this run, which a resume from step 0 went back behind
  dir.write("m-step000007.st", "not a checkpoint");
  remove_old_checkpoints(path, 1, "new", 25);
  std::vector<std::string> left;
  for (const auto& e : std::filesystem::directory_iterator(dir.path)) left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  CHECK(left == std::vector<std::string>{"m-step000003.st", "m-step000007.st", "m-step000025.st", "m-step000030.st",
                                         "m-step001000.st"});
  remove_old_checkpoints(path, 1, "", 25);  // a run without an id removes nothing
  CHECK(std::distance(std::filesystem::directory_iterator(dir.path), std::filesystem::directory_iterator()) == 5);
}

TEST_CASE("a save removes the temporaries that killed saves left for any of its run's files, and nothing else") {
  test::TempDir dir("ckstaletmp");
  pid_t pid = ::fork();  // a process that has exited: its pid is no one's now
  if (pid == 0) ::_exit(0);
  int status = 0;
  ::waitpid(pid, &status, 0);
  const std::string dead = std::to_string(pid);
  for (std::string name : {"m-step000005.st.tmp.", "m-step000005.st.state.next.tmp.", "m.st.state.next.tmp.", "m.st.tmp."})
    dir.write(name + dead + ".0123456789abcdef", "killed");
  dir.write("m.st.tmp." + dead, "killed, older name");
  const std::vector<std::string> kept = {"m-step000005.st.tmp.1.0123456789abcdef",  // pid 1 lives
                                         "other.st.tmp." + dead, "m-stepx.st.tmp." + dead, "notes.txt.tmp." + dead};
  for (const std::string& name : kept) dir.write(name, "not ours, or alive");
  CHECK(remove_stale_checkpoint_temporaries(dir.file("m.st")) == 5);
  std::vector<std::string> left;
  for (const auto& e : std::filesystem::directory_iterator(dir.path)) left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  std::vector<std::string> expected = kept;
  std::sort(expected.begin(), expected.end());
  CHECK(left == expected);
}

TEST_CASE("a SwiGLU model's checkpoint records its MLP kind and loads back exactly") {
  test::TempDir dir("ckswiglu");
  GPTConfig c = small();
  c.mlp = "swiglu";
  GPT a(c);
  AdamW oa({0.9, 0.999, 1e-8, 0.1});
  train_a_little(a, oa, 2);
  std::string path = dir.file("m.safetensors");
  save_checkpoint(path, a, &oa, {2, 42, {}});
  SafetensorsFile f = read_safetensors(path);
  CHECK(f.metadata.at("mlp") == "swiglu");
  CHECK(f.tensors.at("h.0.mlp.c_gate.weight").shape() == Shape{8, 32});  // Conv1D [in, out], as c_fc
  CHECK(f.tensors.at("h.0.mlp.c_up.weight").shape() == Shape{8, 32});
  CHECK(f.tensors.at("h.0.mlp.c_proj.weight").shape() == Shape{32, 8});
  CHECK(f.tensors.size() == 2 + 2 * 14 + 2);
  GPTConfig saved = read_checkpoint_config(path);
  CHECK(saved.mlp == "swiglu");

  saved.seed = 999;  // a different initialisation, overwritten by the load
  saved.vocab_unit = c.vocab_unit, saved.mlp_unit = c.mlp_unit;
  GPT b(saved);
  AdamW ob({0.9, 0.999, 1e-8, 0.1});
  load_checkpoint(path, b, &ob);
  NoGradGuard ng;
  CHECK(a.logits(ids()).to_vector<float>() == b.logits(ids()).to_vector<float>());
  check_same_parameters(a, b);
}

TEST_CASE("a checkpoint without an MLP kind (older flextp) is gelu; another kind's model refuses it") {
  test::TempDir dir("ckmlpkind");
  GPT m(small());
  AdamW opt({});
  std::string path = dir.file("m.safetensors");
  save_checkpoint(path, m, &opt, {1, 1, {}});
  SafetensorsFile f = read_safetensors(path);
  CHECK(f.metadata.at("mlp") == "gelu");
  std::map<std::string, std::string> old = f.metadata;
  old.erase("mlp");
  std::vector<std::pair<std::string, Tensor>> list(f.tensors.begin(), f.tensors.end());
  write_safetensors(path, list, old);
  CHECK(read_checkpoint_config(path).mlp == "gelu");
  GPT back(small());
  AdamW o2({});
  CHECK(load_checkpoint(path, back, &o2).step == 1);

  GPTConfig c = small();
  c.mlp = "swiglu";
  GPT other(c);
  CHECK_THROWS_WITH_AS(load_checkpoint(path, other, nullptr),
                       doctest::Contains("checkpoint has mlp gelu but the model was built with swiglu"), Error);
}

TEST_CASE("a Hugging Face GPT-2 export refuses a SwiGLU model and writes nothing") {
  test::TempDir dir("ckexport");
  GPTConfig c = small();
  c.mlp = "swiglu";
  GPT m(c);
  CHECK_THROWS_WITH_AS(export_hf(dir.file("hf"), m), doctest::Contains("a model with the swiglu MLP is not GPT-2"), Error);
  CHECK_FALSE(std::filesystem::exists(dir.file("hf")));
  // The GELU model exports, as GPT-2's activation.
  GPT g(small());
  export_hf(dir.file("gelu"), g);
  std::ifstream config(dir.file("gelu/config.json"));
  std::string text((std::istreambuf_iterator<char>(config)), std::istreambuf_iterator<char>());
  CHECK(text.find("\"activation_function\": \"gelu_new\"") != std::string::npos);
}
