#include "train/options.h"

#include <cctype>
#include <utility>

#include "nn/mlp_layer.h"
#include "parallel/balance/policy.h"
#include "data/tokenizer_flags.h"

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

}  // namespace

void validate_model_flags(const GPTConfig& c) {
  try {
    c.validate();
  } catch (const Error& e) {
    throw Error(with_model_flags(e.what()));
  }
}

void check_flag_combinations(const TrainOptions& o) {
  FLEXTP_CHECK(o.save_every == 0 || !o.save.empty(), "--save-every ", o.save_every,
               " needs --save PATH (the periodic checkpoints are named after it: PATH-stepNNNNNN)");
  FLEXTP_CHECK(o.keep_last == 0 || o.save_every > 0, "--keep-last ", o.keep_last,
               " needs --save-every N (it prunes the periodic checkpoints; the final --save is always kept)");
  FLEXTP_CHECK(!o.eval_only || o.save.empty(), "--eval-only trains nothing: --save ", o.save, " would save nothing new");
  FLEXTP_CHECK(!o.eval_only || o.export_hf.empty(), "--eval-only exports nothing: leave out --export-hf ", o.export_hf,
               " (a run with --load and --steps equal to its step exports it)");
}

std::unique_ptr<Tokenizer> tokenizer_from_flags(const TrainOptions& o) {
  return tokenizer_from_flags(o.tokenizer, o.tokenizer_dir);
}

void add_train_flags(CLI::App& app, TrainOptions& o) {
  auto positive = CLI::PositiveNumber, non_negative = CLI::NonNegativeNumber;
  app.add_option("--n-layer", o.n_layer, "transformer blocks")->check(positive);
  app.add_option("--n-head", o.n_head, "attention heads per block")->check(positive);
  app.add_option("--n-embd", o.n_embd, "channels (divisible by --n-head)")->check(positive);
  app.add_option("--seq-len", o.seq_len, "tokens per training window")->check(positive);
  app.add_option("--n-positions", o.n_positions, "position table size (default: --seq-len)")->check(positive);
  app.add_option("--vocab", o.vocab, "vocabulary size (default: the tokenizer's)")->check(positive);
  app.add_option("--mlp-unit", o.mlp_unit, "MLP neurons per tensor-parallel unit")->check(positive);
  std::string mlps;
  for (const std::string& name : mlp_kind_names()) mlps += (mlps.empty() ? "" : " or ") + name;
  app.add_option("--mlp", o.mlp, "MLP of every block: " + mlps)->check(CLI::IsMember(mlp_kind_names()));
  app.add_option("--vocab-unit", o.vocab_unit, "vocabulary rows per tensor-parallel unit")->check(positive);
  app.add_option("--dropout", o.dropout, "dropout probability")->check(CLI::Range(0.0, 0.99));
  app.add_option("--data", o.data, "training text file or llm.c shard (glob); default: fortunes");
  app.add_option("--val-data", o.val_data, "validation data (default: the last --val-fraction)");
  app.add_option("--val-fraction", o.val_fraction, "share of --data held out")->check(CLI::Range(0.0, 0.9));
  app.add_option("--batch", o.batch, "windows per optimizer step, over all replicas")->check(positive);
  app.add_option("--steps", o.steps, "total optimizer steps")->check(non_negative);
  app.add_option("--lr", o.lr, "peak learning rate")->check(CLI::PositiveNumber);
  app.add_option("--min-lr", o.min_lr, "final learning rate of the cosine")->check(non_negative);
  app.add_option("--warmup", o.warmup, "linear warm-up steps")->check(non_negative);
  app.add_option("--weight-decay", o.weight_decay, "decoupled weight decay")->check(non_negative);
  app.add_option("--no-decay", o.no_decay, "parameters without weight decay: name parts, comma-separated");
  app.add_option("--grad-clip", o.grad_clip, "global gradient-norm limit (0: off)")->check(non_negative);
  app.add_option("--optimizer", o.optimizer, "adamw or sgd")->check(CLI::IsMember({"adamw", "sgd"}));
  app.add_option("--momentum", o.momentum, "SGD momentum")->check(CLI::Range(0.0, 1.0));
  app.add_option("--seed", o.seed, "seed of initialisation, data order, dropout, sampling");
  app.add_option("--eval-every", o.eval_every, "validation every N steps (0: only at the end)")->check(non_negative);
  app.add_option("--eval-batches", o.eval_batches, "validation batches (of --batch windows)")->check(positive);
  app.add_option("--log-every", o.log_every, "print every N steps")->check(positive);
  app.add_option("--save", o.save, "checkpoint path (weights; optimizer state in PATH.state)");
  app.add_option("--save-every", o.save_every, "also save PATH-stepNNNNNN every N steps")->check(non_negative);
  app.add_option("--load", o.load, "resume from (or, with --eval-only, evaluate) a checkpoint");
  app.add_option("--init-from-hf", o.init_from_hf,
                 "start from a Hugging Face GPT-2 directory (config.json + model.safetensors; at step 0, new optimizer)");
  app.add_option("--metrics", o.metrics, "append one JSON line per step to this file");
  app.add_option("--sample", o.sample, "generate N tokens at the end")->check(non_negative);
  app.add_option("--sample-every", o.sample_every, "also print a sample every N steps (--sample tokens, 64 if not given)")
      ->check(non_negative);
  app.add_option("--prompt", o.prompt, "text the sample continues");
  app.add_option("--temperature", o.temperature, "sampling temperature (0: greedy)")->check(non_negative);
  app.add_option("--top-k", o.top_k, "sample among the k likeliest (0: all)")->check(non_negative);
  app.add_option("--device", o.device, "cpu, cuda (each rank takes the GPU of its local rank) or cuda:N");
  app.add_option("--comm-backend", o.comm_backend, "auto (NCCL when --device cuda under mpirun), mpi or nccl")
      ->check(CLI::IsMember({"auto", "mpi", "nccl"}));
  app.add_flag("--tf32", o.tf32, "GPU: f32 matmuls on TF32 tensor cores (faster, 10-bit mantissa inputs)");
  app.add_flag("--bf16", o.bf16,
               "GPU: matmuls on bf16 tensor cores (inputs rounded to bf16, f32 sums; weights, activations and "
               "AdamW stay f32)");
  app.add_option("--attention", o.attention,
                 "GPU attention: own (f32 kernels), cudnn (cuDNN's fused flash attention, bf16 inputs) or auto "
                 "(cudnn with --bf16, else own)")
      ->check(CLI::IsMember({"auto", "own", "cudnn"}));
  app.add_flag("--eval-only", o.eval_only, "print the validation loss of --load on --data and exit");
  app.add_option("--tokenizer", o.tokenizer, "byte (256 ids, no files) or gpt2 (GPT-2's BPE, 50257 ids)")
      ->check(CLI::IsMember({"byte", "gpt2"}));
  app.add_option("--tokenizer-dir", o.tokenizer_dir, "--tokenizer gpt2: directory holding encoder.json and vocab.bpe (default: the cache that "
                 "scripts/get_gpt2_tokenizer.py fills, ~/.cache/flextp/gpt2)");
  app.add_option("--export-hf", o.export_hf, "at the end, write DIR/config.json + DIR/model.safetensors for transformers");
  app.add_option("--keep-last", o.keep_last, "--save-every: keep only the newest N periodic checkpoints (0: all)")
      ->check(non_negative);
  app.add_option("--max-bad-steps", o.max_bad_steps, "stop after N steps in a row with a non-finite loss or gradient")
      ->check(positive);
  app.add_option("--rank-timeout", o.rank_timeout, "seconds without progress after which a rank assumes a peer died")
      ->check(CLI::PositiveNumber);
  app.add_option("--fault-nan-steps", o.fault_nan_steps, "testing: make the loss NaN at these steps (1-based), e.g. 3,4")
      ->delimiter(',');
  app.add_option("--fault-kill", o.fault_kill, "testing: RANK:STEP, that rank kills itself mid-step");
  app.add_option("--fault-hang", o.fault_hang, "testing: RANK:STEP, that rank stops mid-step (alive, silent)");
  app.add_option("--tp", o.tp, "ranks per tensor-parallel group (consecutive ranks; default all): the rest is data parallel")
      ->check(positive);
  app.add_option("--micro-batch", o.micro_batch,
                 "windows per forward/backward; a replica accumulates its share of --batch in micro-steps (default: "
                 "its whole share)")
      ->check(positive);
  app.add_option("--tp-chunks", o.tp_chunks,
                 "run each micro-step's batch in N chunks whose tensor-parallel all-reduces overlap the other chunks' "
                 "compute (1: the whole batch at once, no overlap)")
      ->check(positive);
  app.add_option("--dp-bucket-mb", o.dp_bucket_mb, "data-parallel gradient all-reduces in buckets of about this many MB")
      ->check(CLI::PositiveNumber);
  app.add_option("--dp-shares", o.dp_shares,
                 "windows of a step per replica: speed (in proportion to each replica's speed) or even")
      ->check(CLI::IsMember({"speed", "even"}));
  app.add_option("--tp-weights", o.tp_weights, "units per rank in proportion, e.g. 3,1 (default: even)");
  app.add_option("--tp-assign", o.tp_assign, "explicit units per rank: KIND[@LAYER]=UNITS|UNITS..., repeatable");
  app.add_option("--straggler", o.stragglers, "slow a rank: RANK:FACTOR[:FROM[:TO]], repeatable");
  app.add_option("--straggler-trace", o.straggler_trace, "CSV of per-step slowdown factors per rank");
  app.add_option("--contend", o.contend, "busy threads beside a rank: RANK:THREADS[:BUSY/PERIOD] (ms), repeatable");
  std::string policies;
  for (const std::string& name : policy_names()) policies += (policies.empty() ? "" : ", ") + name;
  app.add_option("--balance", o.balance, "balancing policy: " + policies)->check(CLI::IsMember(policy_names()));
  app.add_option("--lambda", o.lambda, "hybrid: ms per step that skipping the whole model is worth (inf: never skip)");
  app.add_option("--priority", o.priority, "which units resizing skips first: taylor, norm or random")
      ->check(CLI::IsMember({"taylor", "norm", "random"}));
  app.add_option("--impute", o.impute, "what skipped units contribute: zero or stale (their running mean)")
      ->check(CLI::IsMember({"zero", "stale"}));
  app.add_option("--horizon", o.horizon, "steps a migration must pay for itself in; also the resizing episode length at which the hybrid prices a skipped step double")->check(positive);
  app.add_option("--min-gain", o.min_gain, "least predicted speed-up that triggers a migration")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--monitor-window", o.monitor_window, "EMA span of the speed monitor, steps")->check(positive);
  app.add_flag("!--open-loop", o.closed_loop,
               "act on the model alone: do not judge moves and resizes by the steps after them, nor undo them");
  app.add_option("--model-off", o.model_off,
                 "testing harness: switch off refinements of the balancing model to measure them "
                 "(bursts, holds, noise-gate, head-starts; comma-separated)");
  app.add_option("--comm", o.comm, "auto, allreduce, rs-ag, p2p or alltoallv")
      ->check(CLI::IsMember({"auto", "allreduce", "rs-ag", "p2p", "alltoallv"}));
}

}  // namespace flextp
