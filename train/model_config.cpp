#include "train/model_config.h"

#include <optional>

#include "core/shape.h"
#include "core/text_fields.h"
#include "train/flags.h"

namespace flextp {

namespace {

void check_sizes(const DataOptions& d) {
  FLEXTP_CHECK(d.seq_len <= kMaxModelSize, "--seq-len ", d.seq_len, " exceeds ", kMaxModelSize,
               ", the largest size flextp takes (positions are 32-bit)");
  std::optional<int64_t> step_tokens = checked_mul(d.batch, d.seq_len);
  FLEXTP_CHECK(step_tokens && *step_tokens <= kMaxModelSize, "--batch ", d.batch, " windows of --seq-len ", d.seq_len,
               " tokens exceed ", kMaxModelSize, " tokens in a step, the most flextp takes");
}

// A Hugging Face GPT-2 directory's vocabulary against the tokenizer that will feed it.
void check_hf_vocab(const GPTConfig& c, const CheckpointOptions& o, const Tokenizer& tok) {
  // GPT-2's own vocabulary read as bytes would train, and mean nothing.
  FLEXTP_CHECK(c.vocab_size != 50257 || tok.name() == std::string("gpt2"), "--init-from-hf ", o.init_from_hf,
               " has GPT-2's vocabulary (50257 tokens): train it with --tokenizer gpt2");
  FLEXTP_CHECK(tok.vocab_size() <= c.vocab_size, "--init-from-hf ", o.init_from_hf, " has a vocabulary of ",
               c.vocab_size, " tokens, fewer than the ", tok.vocab_size(), " of --tokenizer ", tok.name());
}

}  // namespace

void validate_model_flags(const GPTConfig& c) {
  try {
    c.validate();
  } catch (const Error& e) {
    CLI::App app;
    TrainOptions o;
    throw Error(with_flag_names(add_train_flags(app, o), e.what()));
  }
}

GPTConfig model_config(const TrainOptions& o, const Tokenizer& tok, const CLI::App& app) {
  const CheckpointOptions& ck = o.checkpoint;
  FLEXTP_CHECK(ck.load.empty() || ck.init_from_hf.empty(), "--load and --init-from-hf exclude each other: --load "
               "resumes a flextp run, --init-from-hf starts a new one from Hugging Face weights");
  check_sizes(o.data);
  // A model read from files has its shape by now (take_recorded_options, train/resume.h).
  GPTConfig c = o.model;
  if (!ck.init_from_hf.empty()) check_hf_vocab(c, ck, tok);
  if (ck.load.empty() && ck.init_from_hf.empty()) {
    if (app.count("--vocab") == 0) c.vocab_size = tok.vocab_size();
    if (app.count("--n-positions") == 0) c.n_positions = o.data.seq_len;
  }
  c.seed = o.seed;
  validate_model_flags(c);
  FLEXTP_CHECK(o.data.seq_len <= c.n_positions, "--seq-len ", o.data.seq_len, " exceeds n_positions ",
               c.n_positions, " (the position table)");
  return c;
}

}  // namespace flextp
