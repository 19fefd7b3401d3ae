// Sizes, numbers and files from users and from disk are checked before use (issue 29): sizes past
// their limits and products that would wrap, NaN or infinity in any floating flag, checkpoints
// whose metadata or weights are not what the tensors say, data files that are neither shards nor
// UTF-8 text. Each case ends with a clear message and status 1, at once.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <set>

#include "core/error.h"
#include "core/safetensors.h"
#include "nn/config.h"
#include "data/token_files.h"
#include "store/checkpoint.h"
#include "tests/run_command.h"
#include "tests/temp_dir.h"
#include "core/parse_flags.h"
#include "train/flags.h"
#include "train/initial_partition.h"
#include "nn/units.h"

using namespace flextp;
using test::Run;
using test::run_train;

namespace {

const std::string kHuge = "9223372036854775807";  // 2^63 - 1

void fails_with(const Run& r, const std::string& message, const char* program = "train") {
  INFO(r.output);
  CHECK(r.status == 1);
  CHECK(r.output.find(std::string(program) + ": error: ") != std::string::npos);
  CHECK(r.output.find(message) != std::string::npos);
}

// A trained one-step checkpoint, and a copy whose metadata or one tensor is changed.
struct Checkpoint {
  test::TempDir dir{"badckpt"};
  std::string data = test::corpus(dir), path = dir.file("m.st");
  Checkpoint() {
    Run r = run_train(std::string(test::kTiny) + " --data " + data + " --steps 1 --save " + path);
    REQUIRE_MESSAGE(r.status == 0, r.output);
  }
  std::string with_metadata(const std::string& key, const std::string& value, const std::string& name) const {
    SafetensorsFile f = read_safetensors(path);
    f.metadata[key] = value;
    return write(f, name);
  }
  std::string write(const SafetensorsFile& f, const std::string& name) const {
    std::vector<std::pair<std::string, Tensor>> tensors(f.tensors.begin(), f.tensors.end());
    write_safetensors(dir.file(name), tensors, f.metadata);
    return dir.file(name);
  }
};

}  // namespace

TEST_CASE("sizes from flags past their limits are refused at once, naming the flag") {
  test::TempDir dir("badsizes");
  const std::string data = " --data " + test::corpus(dir) + " --steps 1 ";
  const std::string model = "--n-layer 2 --n-head 4 --n-embd 64";
  // Each of these crashed, read out of bounds or printed negative counts.
  fails_with(run_train(model + data + "--batch 8 --seq-len " + kHuge), "--seq-len " + kHuge + " exceeds 2147483647");
  // CLI11 alone read it as 2^63 - 1.
  fails_with(run_train(model + data + "--seq-len 99999999999999999999"),
             "--seq-len: '99999999999999999999' does not fit 64 bits (at most 9223372036854775807)");
  fails_with(run_train(model + data + "--seed 99999999999999999999"), "--seed: '99999999999999999999' does not fit 64 bits");
  fails_with(run_train(model + data + "--n-positions " + kHuge), "--n-positions " + kHuge + " exceeds 2147483647");
  // 2^58 x 64 wraps to a 0-byte position table.
  fails_with(run_train(model + data + "--n-positions 288230376151711744"), "--n-positions 288230376151711744 exceeds");
  fails_with(run_train(model + data + "--vocab " + kHuge), "--vocab " + kHuge + " exceeds 2147483647");
  // Within the limits one by one, but not together: refused before any memory grows.
  fails_with(run_train("--n-head 4 --n-embd 64" + data + "--n-layer 1000000000"),
             "--n-layer 1000000000, --n-embd 64, --vocab 256 and --n-positions 128 make about 67584000");
  fails_with(run_train("--n-layer 2 --n-head 1" + data + "--n-embd 2000000000"), "make more parameters than 64 bits count");
  fails_with(run_train(model + data + "--seq-len 1024 --batch 2097152"),
             "--batch 2097152 windows of --seq-len 1024 tokens exceed 2147483647 tokens in a step");
  fails_with(run_train(model + data + "--batch " + kHuge), "--batch " + kHuge + " windows of --seq-len 128 tokens exceed");
  // The same limits where the library builds a model (the flags above and checkpoints reach it).
  GPTConfig c;
  c.n_layer = 1000000000;
  CHECK_THROWS_WITH_AS(c.validate(), doctest::Contains("n_layer 1000000000, n_embd 128, vocab_size 256 and n_positions 128 "
                                                       "make about 266240000049408 parameters"), Error);
  c = GPTConfig{};
  c.n_positions = 288230376151711744;
  CHECK_THROWS_WITH_AS(c.validate(), doctest::Contains("n_positions 288230376151711744 exceeds 2147483647"), Error);
  CHECK_THROWS_WITH_AS(Tensor::empty({288230376151711744, 64}), doctest::Contains("has more bytes than 64 bits can count"), Error);
  GPTConfig{}.validate();
}

TEST_CASE("--eval-batches past 64 bits of windows evaluates every window, with a positive count") {
  Checkpoint ck;
  Run r = run_train("--eval-only --load " + ck.path + " --data " + ck.data + " --seq-len 16 --batch 2 --eval-batches " + kHuge);
  REQUIRE_MESSAGE(r.status == 0, r.output);
  Run all = run_train("--eval-only --load " + ck.path + " --data " + ck.data + " --seq-len 16 --batch 2 --eval-batches 100000");
  REQUIRE_MESSAGE(all.status == 0, all.output);
  CHECK(r.output.find(": loss ") != std::string::npos);
  CHECK(r.output.find(" -") == std::string::npos);  // "-8 windows ... loss -0.000000" before
  CHECK(r.output.substr(r.output.find("windows")) == all.output.substr(all.output.find("windows")));
}

TEST_CASE("no floating flag takes NaN or infinity") {
  CLI::App app;
  TrainOptions o;
  add_train_flags(app, o);
  require_representable_numbers(app);
  std::set<std::string> floating;
  for (CLI::Option* option : app.get_options())
    if (option->get_type_name().rfind("FLOAT", 0) == 0) floating.insert(option->get_name());
  // The flags of the issue are among them (and so is every double flag added later).
  for (const char* flag : {"--grad-clip", "--min-lr", "--dp-bucket-mb", "--min-gain", "--rank-timeout", "--lr",
                           "--dropout", "--val-fraction", "--weight-decay", "--momentum", "--temperature"})
    CHECK_MESSAGE(floating.count(flag) == 1, flag);
  for (const std::string& flag : floating)
    for (const char* value : {"nan", "NaN", "-nan", "inf", "-inf", "infinity", "1e999"}) {
      CAPTURE(flag);
      CAPTURE(value);
      CLI::App fresh;
      TrainOptions f;
      add_train_flags(fresh, f);
      require_representable_numbers(fresh);
      std::vector<std::string> args{value, flag};  // CLI11 takes them last first
      CHECK_THROWS_WITH_AS(fresh.parse(args), doctest::Contains("is not a finite number"), CLI::ValidationError);
    }
  // Finite values still pass.
  CLI::App fine;
  TrainOptions f;
  add_train_flags(fine, f);
  require_representable_numbers(fine);
  fine.parse(std::vector<std::string>{"0.5", "--grad-clip", "1e-4", "--lr"});
  CHECK(f.optimization.schedule.max_lr == 1e-4);
  CHECK(f.optimization.grad_clip == 0.5);
  // End to end, before any work: the message names the flag and the value.
  test::TempDir dir("nanflag");
  const std::string run = std::string(test::kTiny) + " --data " + test::corpus(dir) + " --steps 1 ";
  fails_with(run_train(run + "--grad-clip nan"), "--grad-clip: 'nan' is not a finite number");
  fails_with(run_train(run + "--rank-timeout nan"), "--rank-timeout: 'nan' is not a finite number");
  fails_with(run_train(run + "--lr inf"), "--lr: 'inf' is not a finite number");
  fails_with(test::run_command(std::string(FLEXTP_TOKENIZE_BINARY) + " --out " + dir.file("o") + " --val-fraction nan"),
             "--val-fraction: 'nan' is not a finite number", "flextp-tokenize");
}

TEST_CASE("a checkpoint whose metadata its tensors do not back is refused before a model is built") {
  Checkpoint ck;
  const std::string eval = " --data " + ck.data + " --seq-len 16";
  auto logits = [](const std::string& path) {
    return test::run_command(std::string(FLEXTP_LOGITS_BINARY) + " --load " + path + " --ids 1,2 --out /dev/null");
  };
  std::string positions = ck.with_metadata("n_positions", kHuge, "positions.st");
  const std::string says = "metadata says n_positions " + kHuge + ", n_embd 16 but tensor 'wpe.weight' has shape [16, 16]";
  fails_with(run_train("--eval-only --load " + positions + eval), says);
  fails_with(run_train("--load " + positions + eval + " --steps 2"), says);
  fails_with(logits(positions), says, "flextp-logits");
  // A billion blocks were built (16 GB in 30 s) before any tensor was compared.
  std::string layers = ck.with_metadata("n_layer", "1000000000", "layers.st");
  const std::string holds = "metadata says n_layer 1000000000 but the file holds the tensors of 1 blocks (h.0 to h.0)";
  fails_with(run_train("--eval-only --load " + layers + eval), holds);
  fails_with(logits(layers), holds, "flextp-logits");
  fails_with(run_train("--eval-only --load " + ck.with_metadata("vocab_size", kHuge, "vocab.st") + eval),
             "metadata says vocab_size " + kHuge + ", n_embd 16 but tensor 'wte.weight' has shape [256, 16]");
  fails_with(run_train("--eval-only --load " + ck.with_metadata("n_embd", "4611686018427387904", "embd.st") + eval),
             "metadata says n_embd 4611686018427387904 but tensor 'ln_f.weight' has shape [16]");
  fails_with(logits(ck.with_metadata("n_head", kHuge, "head.st")), "metadata n_head " + kHuge + " does not divide n_embd 16",
             "flextp-logits");
  // The checkpoint as saved passes.
  CHECK(read_checkpoint_config(ck.path).n_layer == 1);
}

TEST_CASE("an optimizer-state file given for weights is named as such by every program, with the file to give") {
  Checkpoint ck;
  const std::string state = ck.path + ".state";
  // Was: "tensor 'ln_f.weight' is missing (at .../store/checkpoint.cpp:345)".
  const std::string says = state + " is an optimizer-state file (adamw), not weights: give the weights file it was "
                                   "saved beside, " + ck.path + "\n";
  auto refused = [&](const Run& r, const char* program) {
    fails_with(r, says, program);
    CHECK(r.output.find("(at ") == std::string::npos);  // no source line in a user's error
  };
  const std::string data = " --data " + ck.data + " --seq-len 16";
  refused(run_train("--load " + state + data + " --steps 3"), "train");
  refused(run_train("--eval-only --load " + state + data), "train");
  refused(test::run_command(std::string(FLEXTP_SAMPLE_BINARY) + " --load " + state), "flextp-sample");
  refused(test::run_command(std::string(FLEXTP_LOGITS_BINARY) + " --load " + state + " --ids 1,2 --out /dev/null"),
          "flextp-logits");
  // Its interrupted-save twin, and the library's own error (which keeps its source line).
  const std::string next = ck.dir.file("n.st.state.next");
  std::filesystem::copy_file(state, next);
  const std::string library = "not weights: give the weights file it was saved beside, " + ck.dir.file("n.st") + " (at ";
  CHECK_THROWS_WITH_AS(read_checkpoint_config(next), doctest::Contains(library.c_str()), Error);
}

TEST_CASE("a checkpoint with a NaN or an infinity is refused on load, naming the tensor") {
  Checkpoint ck;
  SafetensorsFile f = read_safetensors(ck.path);
  Tensor w = f.tensors.at("h.0.attn.c_proj.weight").clone();
  w.data<float>()[5] = std::numeric_limits<float>::quiet_NaN();
  f.tensors["h.0.attn.c_proj.weight"] = w;
  std::string bad = ck.write(f, "nan.st");
  const std::string says = bad + ": tensor 'h.0.attn.c_proj.weight' holds nan at element 5";
  const std::string eval = " --data " + ck.data + " --seq-len 16";
  fails_with(run_train("--eval-only --load " + bad + eval), says);  // printed "loss nan", status 0
  // Its optimizer state, and an infinity there, too.
  std::filesystem::copy_file(ck.path + ".state", bad + ".state");
  fails_with(run_train(std::string(test::kTiny) + " --load " + bad + " --data " + ck.data + " --steps 3"), says);
  SafetensorsFile s = read_safetensors(ck.path + ".state");
  Tensor m = s.tensors.at("wpe.weight.m").clone();
  m.data<float>()[0] = -std::numeric_limits<float>::infinity();
  s.tensors["wpe.weight.m"] = m;
  std::vector<std::pair<std::string, Tensor>> slots(s.tensors.begin(), s.tensors.end());
  write_safetensors(ck.path + ".state", slots, s.metadata);
  fails_with(run_train(std::string(test::kTiny) + " --load " + ck.path + " --data " + ck.data + " --steps 3"),
             ck.path + ".state: tensor 'wpe.weight.m' holds -inf at element 0");
}

TEST_CASE("a run whose every step is skipped fails and saves nothing over the checkpoint it started from") {
  Checkpoint ck;
  const std::string good = test::read_bytes(ck.path), good_state = test::read_bytes(ck.path + ".state");
  const std::string base = std::string(test::kTiny) + " --data " + ck.data + " --load " + ck.path + " --save " + ck.path;
  fails_with(run_train(base + " --steps 3 --fault-nan-steps 2,3"),
             "every one of the 2 steps of this run was skipped (a non-finite loss or gradient); nothing was saved over " + ck.path);
  CHECK(test::read_bytes(ck.path) == good);
  CHECK(test::read_bytes(ck.path + ".state") == good_state);
  // One good step among them is a run that learnt something: it saves.
  Run some = run_train(base + " --steps 3 --fault-nan-steps 3");
  CHECK_MESSAGE(some.status == 0, some.output);
  CHECK(test::read_bytes(ck.path) != good);
}

TEST_CASE("a safetensors header is read without a JSON tree: too deep or not an object is refused where it starts") {
  test::TempDir dir("deepheader");
  auto file = [&](const std::string& header) {
    std::string bytes(8, '\0');
    for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
    return dir.write("h.st", bytes + header);
  };
  // A megabyte of nested arrays: the parser built all of it first (100 MB: 3.9 GB and 8.5 s).
  const size_t depth = 1 << 20;
  CHECK_THROWS_WITH_AS(read_safetensors(file(std::string(depth, '[') + std::string(depth, ']'))),
                       doctest::Contains("header is not a JSON object"), Error);
  CHECK_THROWS_WITH_AS(read_safetensors(file(R"({"a":)" + std::string(depth, '[') + std::string(depth, ']') + "}")),
                       doctest::Contains("header nests deeper than 3 levels"), Error);
  // The header alone (a checkpoint listing reads no tensors) goes through the same reader.
  CHECK_THROWS_WITH_AS(read_safetensors_metadata(file(R"({"a":)" + std::string(depth, '[') + std::string(depth, ']') + "}")),
                       doctest::Contains("header nests deeper than 3 levels"), Error);
  CHECK_THROWS_WITH_AS(read_safetensors_metadata(file(R"({"__metadata__":{"step":5}})")),
                       doctest::Contains("metadata 'step' is not a string"), Error);
  CHECK(read_safetensors_metadata(file(R"({"__metadata__":{"step":"5"}})")).at("step") == "5");
  CHECK_THROWS_WITH_AS(read_safetensors(file(R"({"a":{"dtype":"F32","shape":[[1]],"data_offsets":[0,4]}})")),
                       doctest::Contains("header nests deeper than 3 levels"), Error);
  // A header of empty tensors: each entry cost about 1.4 KB (100 MB of them: 2.3 GB).
  std::string empties = "{";
  for (int i = 0; i < 5000; ++i) empties += "\"t" + std::to_string(i) + R"(":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},)";
  empties.back() = '}';
  CHECK_THROWS_WITH_AS(read_safetensors(file(empties)),
                       doctest::Contains("the header lists more tensors than its 0 data bytes can hold (4 bytes or more "
                                         "each, and at most 4096 empty ones)"),
                       Error);
  CHECK_THROWS_WITH_AS(read_safetensors(file(R"({"__metadata__":{"k":["v"]}})")),
                       doctest::Contains("metadata 'k' is not a string"), Error);
  CHECK_THROWS_WITH_AS(read_safetensors(file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{}})")),
                       doctest::Contains("'a' appears twice in the header"), Error);
  // Brackets inside strings are text, not nesting.
  std::string ok = R"({"__metadata__":{"note":"[[[[{{{{\"]]]]"},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
  ok.append((8 - ok.size() % 8) % 8, ' ');
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((ok.size() >> (8 * i)) & 0xff);
  SafetensorsFile f = read_safetensors(dir.write("ok.st", bytes + ok + std::string(4, '\0')));
  CHECK(f.metadata.at("note") == "[[[[{{{{\"]]]]");
  CHECK(f.tensors.at("a").numel() == 1);
}

TEST_CASE("a data file is a shard by its magic and text only when it is UTF-8") {
  test::TempDir dir("datakinds");
  ByteTokenizer tok;
  write_shard(dir.file("s.bin"), {1, 2, 3, 65, 66});
  std::string shard = test::read_bytes(dir.file("s.bin"));
  std::string damaged = shard;
  damaged[0] = static_cast<char>(damaged[0] + 1);  // magic 20240521
  const std::string bad = dir.write("bad.bin", damaged);
  // As a plain path it was read as 1034 bytes of text and trained on; through a glob it was refused.
  CHECK_THROWS_WITH_AS(load_tokens(bad, tok), doctest::Contains((bad + ": byte 0x").c_str()), Error);
  CHECK_THROWS_WITH_AS(load_tokens(bad, tok), doctest::Contains("not an llm.c token shard either (its magic is 20240521, not 20240520)"), Error);
  CHECK_THROWS_WITH_AS(load_tokens(dir.file("bad.b?n"), tok), doctest::Contains("bad shard magic 20240521"), Error);
  CHECK(load_tokens(dir.file("s.bin"), tok) == std::vector<int32_t>{1, 2, 3, 65, 66});
  // Latin-1 is not UTF-8: the byte, where it is, and what to do.
  const std::string latin1 = dir.write("latin1.txt", "first line\ncaf\xe9 au lait\n");
  CHECK_THROWS_WITH_AS(load_tokens(latin1, tok), doctest::Contains("byte 0xe9 at offset 14 (line 2) is not UTF-8 text"), Error);
  CHECK_THROWS_WITH_AS(load_tokens(latin1, tok), doctest::Contains("iconv -f latin1 -t utf-8"), Error);
  CHECK_THROWS_WITH_AS(load_tokens(dir.write("nul.txt", std::string("a\0b", 3)), tok),
                       doctest::Contains("byte 0x00 at offset 1"), Error);
  CHECK_THROWS_WITH_AS(load_tokens(dir.write("cut.txt", "caf\xc3"), tok), doctest::Contains("byte 0xc3 at offset 3"), Error);
  // UTF-8 text passes, whatever its script.
  CHECK(load_tokens(dir.write("utf8.txt", "caf\xc3\xa9 \xe4\xb8\xad"), tok).size() == 9);
  // End to end, the flag's file named.
  fails_with(run_train("--data " + bad), bad + ": byte 0x");
  fails_with(run_train("--data " + test::corpus(dir) + " --val-data " + latin1), latin1 + ": byte 0xe9");
  fails_with(test::run_command(std::string(FLEXTP_TOKENIZE_BINARY) + " --out " + dir.file("o") + " --input " + latin1),
             latin1 + ": byte 0xe9", "flextp-tokenize");
}

TEST_CASE("a directory as --data is refused, naming it and the glob that reads its shards") {
  test::TempDir dir("datadir");
  // Before, it read as an empty text: "0 tokens", and no word of why.
  ByteTokenizer tok;
  CHECK_THROWS_WITH_AS(load_tokens(dir.path.string(), tok), doctest::Contains("is a directory, not a data file"), Error);
  fails_with(run_train("--data " + dir.path.string()), dir.path.string() + " is a directory, not a data file");
  fails_with(run_train("--data " + test::corpus(dir) + " --val-data " + dir.path.string()),
             "'" + dir.path.string() + "/train_*.bin'");
  fails_with(test::run_command(std::string(FLEXTP_TOKENIZE_BINARY) + " --out " + dir.file("o") + " --input " +
                               dir.path.string()),
             "is a directory, not a data file", "flextp-tokenize");
}

TEST_CASE("an empty input to flextp-tokenize fails, naming it, and writes no shard") {
  test::TempDir dir("emptyinput");
  const std::string empty = dir.write("empty.txt", "");
  const std::string tokenize = std::string(FLEXTP_TOKENIZE_BINARY) + " --out " + dir.file("o");
  fails_with(test::run_command(tokenize + " --input " + empty), "no text to tokenize: --input " + empty + " is empty",
             "flextp-tokenize");
  CHECK(!std::filesystem::exists(dir.file("o")));
  fails_with(test::run_command(tokenize + " --input " + empty + " --input " + empty), "every --input is empty",
             "flextp-tokenize");
  // One empty input beside text is harmless.
  Run some = test::run_command(tokenize + " --input " + empty + " --input " + test::corpus(dir));
  CHECK_MESSAGE(some.status == 0, some.output);
}

TEST_CASE("more tensor ranks than heads: the ranks without a head are named, with what gives each rank some") {
  GPTConfig c;
  c.n_layer = 2, c.n_head = 4, c.n_embd = 32, c.vocab_size = 256, c.n_positions = 16, c.mlp_unit = 16;
  CHECK(unowned_kinds_note(c, Partition::even(unit_groups(c), 4)).empty());
  const std::string note = unowned_kinds_note(c, Partition::even(unit_groups(c), 8));
  CHECK_MESSAGE(note.find("note: ranks 4-7 of 8 own no attention head (4 per layer over 8 tensor ranks)") !=
                    std::string::npos,
                note);
  CHECK_MESSAGE(note.find("--n-head 8 (or a multiple), or at most 4 tensor ranks (--tp)") != std::string::npos, note);
  CHECK(note.find("MLP block") == std::string::npos);  // 8 blocks of 16 over 8 ranks: one each
  // End to end: one head over two ranks; the run goes on (rank 1 computes its MLP and vocabulary units).
  test::TempDir dir("fewheads");
  Run r = test::run_train_on(2, 2, "--n-layer 1 --n-head 1 --n-embd 16 --mlp-unit 16 --seq-len 16 --batch 2 --data " +
                                       test::corpus(dir) + " --steps 1 --no-save");
  CHECK_MESSAGE(r.status == 0, r.output);
  CHECK_MESSAGE(r.output.find("note: rank 1 of 2 owns no attention head") != std::string::npos, r.output);
}
