#include "train/model_config.h"

#include <cctype>
#include <map>
#include <optional>
#include <tuple>
#include <utility>

#include "core/shape.h"
#include "core/text_fields.h"
#include "store/checkpoint.h"
#include "store/hf_gpt2.h"
#include "train/flags.h"

namespace flextp {

namespace {

// GPTConfig's settings that a flag sets, as its errors name them.
const std::pair<const char*, const char*> kModelFlags[] = {
    {"n_layer", "--n-layer"},   {"n_head", "--n-head"},         {"n_embd", "--n-embd"},
    {"mlp_unit", "--mlp-unit"}, {"vocab_unit", "--vocab-unit"}, {"dropout", "--dropout"},
    {"n_positions", "--n-positions"}, {"vocab_size", "--vocab"}};

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The message with every setting named as a whole word replaced by its flag.
std::string with_model_flags(std::string message) {
  for (const auto& [setting, flag] : kModelFlags) {
    const std::string name = setting;
    for (size_t at = message.find(name); at != std::string::npos; at = message.find(name, at)) {
      size_t end = at + name.size();
      bool whole = (at == 0 || !word_char(message[at - 1])) && (end == message.size() || !word_char(message[end]));
      if (!whole) {
        at = end;
        continue;
      }
      message.replace(at, name.size(), flag);
      at += std::string(flag).size();
    }
  }
  return message;
}

void check_sizes(const DataOptions& d) {
  FLEXTP_CHECK(d.seq_len <= kMaxModelSize, "--seq-len ", d.seq_len, " exceeds ", kMaxModelSize,
               ", the largest size flextp takes (positions are 32-bit)");
  std::optional<int64_t> step_tokens = checked_mul(d.batch, d.seq_len);
  FLEXTP_CHECK(step_tokens && *step_tokens <= kMaxModelSize, "--batch ", d.batch, " windows of --seq-len ", d.seq_len,
               " tokens exceed ", kMaxModelSize, " tokens in a step, the most flextp takes");
}

// The model a checkpoint (--load) or a Hugging Face directory (--init-from-hf) holds.
GPTConfig saved_config(const CheckpointOptions& o, const Tokenizer& tok) {
  if (!o.load.empty()) {
    GPTConfig c = read_checkpoint_config(o.load);
    std::map<std::string, std::string> extra = read_checkpoint_extra(o.load);
    auto was = extra.find("tokenizer");
    FLEXTP_CHECK(was == extra.end() || was->second == tok.name(), o.load, " was trained with --tokenizer ",
                 was->second, ", not ", tok.name());
    return c;
  }
  GPTConfig c = with_flag("--init-from-hf", [&] { return read_hf_config(o.init_from_hf); });
  // GPT-2's own vocabulary read as bytes would train, and mean nothing.
  FLEXTP_CHECK(c.vocab_size != 50257 || tok.name() == std::string("gpt2"), "--init-from-hf ", o.init_from_hf,
               " has GPT-2's vocabulary (50257 tokens): train it with --tokenizer gpt2");
  FLEXTP_CHECK(tok.vocab_size() <= c.vocab_size, "--init-from-hf ", o.init_from_hf, " has a vocabulary of ",
               c.vocab_size, " tokens, fewer than the ", tok.vocab_size(), " of --tokenizer ", tok.name());
  return c;
}

}  // namespace

void validate_model_flags(const GPTConfig& c) {
  try {
    c.validate();
  } catch (const Error& e) {
    throw Error(with_model_flags(e.what()));
  }
}

GPTConfig model_config(const TrainOptions& o, const Tokenizer& tok, const CLI::App& app) {
  const CheckpointOptions& ck = o.checkpoint;
  FLEXTP_CHECK(ck.load.empty() || ck.init_from_hf.empty(), "--load and --init-from-hf exclude each other: --load "
               "resumes a flextp run, --init-from-hf starts a new one from Hugging Face weights");
  check_sizes(o.data);
  const GPTConfig& m = o.model;
  GPTConfig c = m;
  const std::string& from = ck.load.empty() ? ck.init_from_hf : ck.load;
  if (!from.empty()) {  // the checkpoint decides; flags given explicitly must agree
    c = saved_config(ck, tok);
    for (auto [flag, value, saved] : {std::tuple{"--n-layer", m.n_layer, c.n_layer},
                                      {"--n-head", m.n_head, c.n_head}, {"--n-embd", m.n_embd, c.n_embd},
                                      {"--vocab", m.vocab_size, c.vocab_size},
                                      {"--n-positions", m.n_positions, c.n_positions}})
      FLEXTP_CHECK(app.count(flag) == 0 || value == saved, flag, " ", value, " differs from the ",
                   saved, " of checkpoint ", from);
    FLEXTP_CHECK(app.count("--mlp") == 0 || m.mlp == c.mlp, "--mlp ", m.mlp, " differs from the ", c.mlp,
                 " MLP of checkpoint ", from);
  } else {
    if (app.count("--vocab") == 0) c.vocab_size = tok.vocab_size();
    if (app.count("--n-positions") == 0) c.n_positions = o.data.seq_len;
  }
  c.mlp_unit = m.mlp_unit, c.vocab_unit = m.vocab_unit, c.dropout = m.dropout, c.seed = o.seed;
  validate_model_flags(c);
  FLEXTP_CHECK(o.data.seq_len <= c.n_positions, "--seq-len ", o.data.seq_len, " exceeds n_positions ",
               c.n_positions, " (the position table)");
  return c;
}

}  // namespace flextp
