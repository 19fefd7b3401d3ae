#include "train/flags.h"

#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <sstream>

#include "core/parse_flags.h"
#include "core/text_fields.h"
#include "nn/mlp.h"
#include "parallel/balance/policy.h"
#include "train/version.h"

namespace flextp {

namespace {

const CLI::Validator positive = above_zero(), non_negative = at_least_zero();

std::string joined(const std::vector<std::string>& names, const std::string& separator) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "" : separator) + name;
  return out;
}

// --lambda: a non-negative number or inf.
std::optional<double> lambda_value(const std::string& s) {
  if (s == "inf" || s == "infinity") return std::numeric_limits<double>::infinity();
  std::optional<double> v = whole_double(s);
  if (!v || *v < 0 || !std::isfinite(*v)) return std::nullopt;
  return v;
}

std::string text_of(double v) {
  std::ostringstream text;
  text << v;
  return text.str();
}

void add_model_flags(CLI::App& app, GPTConfig& m) {
  app.add_option("--n-layer", m.n_layer, "transformer blocks")->check(positive);
  app.add_option("--n-head", m.n_head, "attention heads per block")->check(positive);
  app.add_option("--n-embd", m.n_embd, "channels (divisible by --n-head)")->check(positive);
  app.add_option("--n-positions", m.n_positions, "position table size")->check(positive)->default_str("--seq-len");
  app.add_option("--vocab", m.vocab_size, "vocabulary size")->check(positive)->default_str("the tokenizer's");
  app.add_option("--mlp", m.mlp, "MLP of every block: " + joined(mlp_kind_names(), " or "))
      ->check(CLI::IsMember(mlp_kind_names()));
  app.add_option("--mlp-unit", m.mlp_unit, "MLP neurons per tensor-parallel unit")->check(positive);
  app.add_option("--vocab-unit", m.vocab_unit, "vocabulary rows per tensor-parallel unit")->check(positive);
  app.add_option("--dropout", m.dropout, "dropout probability")->check(within(0, 0.99));
}

void add_data_flags(CLI::App& app, DataOptions& d) {
  app.add_option("--data", d.data, "training text file or llm.c shard (glob)")->default_str("fortunes");
  app.add_option("--val-data", d.val_data, "validation data")->default_str("the last --val-fraction");
  app.add_option("--val-fraction", d.val_fraction, "share of --data held out")->check(within(0, 0.9));
  app.add_option("--tokenizer", d.tokenizer, "byte (256 ids, no files) or gpt2 (GPT-2's BPE, 50257 ids)")
      ->check(CLI::IsMember({"byte", "gpt2"}));
  app.add_option("--tokenizer-dir", d.tokenizer_dir, "--tokenizer gpt2: directory holding encoder.json and vocab.bpe")
      ->default_str("the cache of scripts/get_gpt2_tokenizer.py, ~/.cache/flextp/gpt2");
  app.add_option("--batch", d.batch, "windows per optimizer step, over all replicas")->check(positive);
  app.add_option("--seq-len", d.seq_len, "tokens per training window")->check(positive);
}

void add_optimization_flags(CLI::App& app, OptimizationOptions& t, uint64_t& seed) {
  app.add_option("--steps", t.steps, "total optimizer steps")->check(non_negative);
  app.add_option("--lr", t.schedule.max_lr, "peak learning rate")->check(above_zero());
  app.add_option("--min-lr", t.schedule.min_lr, "final learning rate of the cosine")->check(non_negative);
  app.add_option("--warmup", t.schedule.warmup, "linear warm-up steps")->check(non_negative);
  app.add_flag("--reset-schedule", t.reset_schedule,
               "with --load: stretch the learning-rate schedule to --steps (default: keep the checkpoint's)")
      ->default_str("off");
  app.add_option("--optimizer", t.optimizer, "adamw or sgd")->check(CLI::IsMember({"adamw", "sgd"}));
  app.add_option("--weight-decay", t.weight_decay, "decoupled weight decay")->check(non_negative);
  app.add_option("--no-decay", t.no_decay, "parameters without weight decay: name parts, comma-separated");
  app.add_option("--momentum", t.momentum, "SGD momentum")->check(within(0, 1.0));
  app.add_option("--grad-clip", t.grad_clip, "global gradient-norm limit (0: off)")->check(non_negative);
  app.add_option("--max-bad-steps", t.max_bad_steps, "stop after N steps in a row with a non-finite loss or gradient")
      ->check(positive);
  app.add_option("--seed", seed, "seed of initialisation, data order, dropout, sampling");
}

void add_parallel_flags(CLI::App& app, ParallelOptions& p) {
  app.add_option("--device", p.device, "cpu, cuda (each rank takes the GPU of its local rank) or cuda:N");
  app.add_option("--comm-backend", p.comm_backend, "auto (NCCL when --device cuda under mpirun), mpi or nccl")
      ->check(CLI::IsMember({"auto", "mpi", "nccl"}));
  app.add_flag("--tf32", p.tf32, "GPU: f32 matmuls on TF32 tensor cores (faster, 10-bit mantissa inputs)")
      ->default_str("off");
  app.add_flag("--bf16", p.bf16,
               "GPU: matmuls on bf16 tensor cores (inputs rounded to bf16, f32 sums; weights, activations and "
               "AdamW stay f32)")
      ->default_str("off");
  app.add_option("--attention", p.attention,
                 "GPU attention: own (f32 kernels), cudnn (cuDNN's fused flash attention, bf16 inputs) or auto "
                 "(cudnn with --bf16, else own)")
      ->check(CLI::IsMember({"auto", "own", "cudnn"}));
  app.add_option("--tp", p.tp, "ranks per tensor-parallel group (consecutive ranks): the rest is data parallel")
      ->check(positive)
      ->default_str("all ranks");
  app.add_option("--placement", p.placement,
                 "rank order: host (a host's ranks consecutive, so a --tp group stays on one host) or launcher "
                 "(mpirun's order)")
      ->check(CLI::IsMember({"host", "launcher"}));
  app.add_option("--micro-batch", p.micro_batch,
                 "windows per forward/backward; a replica accumulates its share of --batch in micro-steps")
      ->check(positive)
      ->default_str("a replica's share");
  app.add_option("--dp-bucket-mb", p.dp_bucket_mb, "data-parallel gradient all-reduces in buckets of about this many MB")
      ->check(above_zero());
  app.add_option("--dp-shares", p.dp_shares,
                 "windows of a step per replica: speed (in proportion to each replica's speed) or even")
      ->check(CLI::IsMember({"speed", "even"}));
  app.add_option("--tp-weights", p.tp_weights, "units per rank in proportion, e.g. 3,1")->default_str("even");
  app.add_option("--tp-assign", p.tp_assign, "explicit units per rank: KIND[@LAYER]=UNITS|UNITS..., repeatable")
      ->default_str("none");
  app.add_option("--comm", p.comm, "auto, allreduce, rs-ag, p2p or alltoallv")
      ->check(CLI::IsMember({"auto", "allreduce", "rs-ag", "p2p", "alltoallv"}));
  app.add_option("--rank-timeout", p.rank_timeout, "seconds without progress after which a rank assumes a peer died")
      ->check(above_zero());
}

void add_balancing_flags(CLI::App& app, BalanceOptions& o) {
  app.add_option("--balance", o.policy, "balancing policy: " + joined(policy_names(), ", "))
      ->check(CLI::IsMember(policy_names()));
  app.add_option_function<std::string>(
         "--lambda", [&o](const std::string& s) { o.lambda = *lambda_value(s); },
         "hybrid: ms per step that skipping the whole model is worth (inf: never skip)")
      ->check(CLI::Validator(
          [](std::string& s) { return lambda_value(s) ? "" : "'" + s + "' must be a number >= 0 or inf"; }, "X|inf"))
      ->default_str(text_of(o.lambda));
  app.add_option("--priority", o.resize.priority, "which units resizing skips first: taylor, norm or random")
      ->check(CLI::IsMember({"taylor", "norm", "random"}));
  app.add_option("--horizon", o.planner.horizon,
                 "steps a migration must pay for itself in; also the resizing episode length at which the hybrid "
                 "prices a skipped step double")
      ->check(positive);
  app.add_option("--min-gain", o.planner.min_gain, "least predicted speed-up that triggers a migration")
      ->check(within(0, 1.0));
  app.add_option("--monitor-window", o.window, "EMA span of the speed monitor, steps")->check(positive);
  app.add_flag("!--open-loop", o.trials.enabled,
               "act on the model alone: do not judge moves and resizes by the steps after them, nor undo them")
      ->default_str("off");
}

void add_checkpoint_flags(CLI::App& app, CheckpointOptions& c) {
  app.add_option("--save", c.save, "checkpoint path (weights; optimizer state in PATH.state)")
      ->default_str("runs/NAME/model.safetensors");
  app.add_option("--name", c.name,
                 "name of the run directory runs/NAME/ that a run without --save saves into: letters, digits, '.', "
                 "'-' and '_', not starting with '.'")
      ->check(CLI::Validator(
          [](std::string& s) {
            const bool name = !s.empty() && s.size() <= 255 && s[0] != '.' &&
                              s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") ==
                                  std::string::npos;
            return name ? "" : "'" + s + "' is not a run name (letters, digits, '.', '-' and '_', not starting with "
                                         "'.', at most 255): the run goes into runs/NAME/; --save PATH saves elsewhere";
          },
          ""))
      ->default_str("the start time, YYYYMMDD-HHMMSS");
  app.add_flag("--no-save", c.no_save, "keep no checkpoint (a run without --save saves into runs/NAME/)")
      ->default_str("off");
  app.add_option("--save-every", c.save_every, "also save PATH-stepNNNNNN every N steps")->check(non_negative);
  app.add_option("--keep-last", c.keep_last, "--save-every: keep only the newest N periodic checkpoints (0: all)")
      ->check(non_negative);
  app.add_option("--snapshot-dir", c.snapshot_dir,
                 "recovery after losing a host: every --snapshot-every steps each rank writes its shard into DIR, a "
                 "directory on its own host (the same path on every host), and a copy into the next host's")
      ->default_str("none");
  app.add_option("--snapshot-every", c.snapshot_every, "--snapshot-dir: steps between snapshots")
      ->check(positive)
      ->default_str(std::to_string(kDefaultSnapshotEvery));
  app.add_flag("--resume-snapshot", c.resume_snapshot,
               "start from the newest complete snapshot that the hosts of this run hold in --snapshot-dir (none: "
               "from --load, --init-from-hf or step 0, as without it); scripts/launch --restarts adds it")
      ->default_str("off");
  app.add_option("--load", c.load, "resume from (or, with --eval-only, evaluate) a checkpoint")->default_str("none");
  app.add_option("--init-from-hf", c.init_from_hf,
                 "start from a Hugging Face GPT-2 directory (config.json + model.safetensors; at step 0, new optimizer)")
      ->default_str("none");
  app.add_option("--export-hf", c.export_hf, "at the end, write DIR/config.json + DIR/model.safetensors for transformers")
      ->default_str("none");
}

void add_output_flags(CLI::App& app, OutputOptions& o) {
  app.add_option("--log-every", o.log_every, "print every N steps")->check(positive);
  app.add_option("--metrics", o.metrics, "append one JSON line per step to this file")->default_str("none");
  app.add_option("--eval-every", o.eval_every, "validation every N steps (0: only at the end)")->check(non_negative);
  app.add_option("--eval-batches", o.eval_batches, "validation batches (of --batch windows)")->check(positive);
  app.add_flag("--eval-only", o.eval_only, "print the validation loss of --load on --data and exit")
      ->default_str("off");
  app.add_option("--sample", o.sample, "generate N tokens at the end")->check(non_negative);
  app.add_option("--sample-every", o.sample_every, "also print a sample every N steps (--sample tokens, 64 if not given)")
      ->check(non_negative);
  app.add_option("--prompt", o.prompt, "text the sample continues")->default_str("a newline");
  app.add_option("--temperature", o.temperature, "sampling temperature (0: greedy)")->check(non_negative);
  app.add_option("--top-k", o.top_k, "sample among the k likeliest (0: all)")->check(non_negative);
}

void add_harness_flags(CLI::App& app, HarnessOptions& h) {
  app.add_option("--fault-nan-steps", h.fault_nan_steps, "make the loss NaN at these steps (1-based), e.g. 3,4")
      ->delimiter(',')
      ->default_str("none");
  app.add_option("--fault-kill", h.fault_kill, "RANK:STEP, that rank kills itself mid-step")->default_str("none");
  app.add_option("--fault-hang", h.fault_hang, "RANK:STEP, that rank stops mid-step (alive, silent)")->default_str("none");
  app.add_option("--straggler", h.stragglers, "slow a rank: RANK:FACTOR[:FROM[:TO]], repeatable")->default_str("none");
  app.add_option("--straggler-trace", h.straggler_trace, "CSV of per-step slowdown factors per rank")->default_str("none");
  app.add_option("--contend", h.contend, "busy threads beside a rank: RANK:THREADS[:BUSY/PERIOD] (ms), repeatable")
      ->default_str("none");
}

}  // namespace

void add_train_flags(CLI::App& app, TrainOptions& o) {
  app.option_defaults()->always_capture_default();
  for (CLI::Option* general :
       {app.get_help_ptr(),
        app.set_config("--config", "", "read flags from a TOML or INI file (KEY = VALUE, KEY a flag without its "
                       "dashes); flags on the command line override it"),
        app.set_version_flag("--version", version_text()),
        app.add_flag("--debug", o.debug, "a failure's message also names the source line it comes from")})
    general->group("General");
  app.allow_config_extras(CLI::config_extras_mode::error);
  const std::pair<const char*, std::function<void()>> groups[] = {
      {"Model", [&] { add_model_flags(app, o.model); }},
      {"Data", [&] { add_data_flags(app, o.data); }},
      {"Optimisation", [&] { add_optimization_flags(app, o.optimization, o.seed); }},
      {"Devices and parallelism", [&] { add_parallel_flags(app, o.parallel); }},
      {"Balancing", [&] { add_balancing_flags(app, o.balancing); }},
      {"Checkpoints", [&] { add_checkpoint_flags(app, o.checkpoint); }},
      {"Output: logs, evaluation, samples", [&] { add_output_flags(app, o.output); }},
      {"Testing harness (emulated faults and slow ranks, to test and measure flextp; not for training runs)",
       [&] { add_harness_flags(app, o.harness); }}};
  for (const auto& [group, add] : groups) {
    size_t before = app.get_options().size();
    add();
    std::vector<CLI::Option*> options = app.get_options();
    for (size_t i = before; i < options.size(); ++i) options[i]->group(group);
  }
}

void check_flag_combinations(const TrainOptions& o) {
  const CheckpointOptions& c = o.checkpoint;
  FLEXTP_CHECK(c.save_every == 0 || !c.save.empty(), "--save-every ", c.save_every,
               " needs --save PATH (the periodic checkpoints are named after it: PATH-stepNNNNNN)");
  FLEXTP_CHECK(c.keep_last == 0 || c.save_every > 0, "--keep-last ", c.keep_last,
               " needs --save-every N (it prunes the periodic checkpoints; the final --save is always kept)");
  FLEXTP_CHECK(!c.no_save || c.save.empty(), "--no-save and --save ", c.save, " exclude each other");
  FLEXTP_CHECK(c.snapshot_every == 0 || !c.snapshot_dir.empty(), "--snapshot-every ", c.snapshot_every,
               " needs --snapshot-dir DIR (where the snapshots go)");
  FLEXTP_CHECK(!c.resume_snapshot || !c.snapshot_dir.empty(),
               "--resume-snapshot needs --snapshot-dir DIR (the directory the snapshots are in)");
  FLEXTP_CHECK(c.snapshot_dir.empty() || !o.output.eval_only, "--eval-only trains nothing: --snapshot-dir ",
               c.snapshot_dir, " would keep nothing");
  FLEXTP_CHECK(!c.no_save || c.name.empty(), "--no-save keeps nothing: --name ", c.name, " would name nothing");
  FLEXTP_CHECK(!o.output.eval_only || c.save.empty(), "--eval-only trains nothing: --save ", c.save,
               " would save nothing new");
  FLEXTP_CHECK(!o.output.eval_only || c.export_hf.empty(), "--eval-only exports nothing: leave out --export-hf ",
               c.export_hf, " (a run with --load and --steps equal to its step exports it)");
  FLEXTP_CHECK(!o.optimization.reset_schedule || !c.load.empty(),
               "--reset-schedule needs --load CHECKPOINT (a new run's schedule ends at --steps)");
  const ParallelOptions& p = o.parallel;
  FLEXTP_CHECK(!(p.bf16 && p.tf32), "--bf16 and --tf32 exclude each other: pick one matmul precision");
}

void check_device_flags(const ParallelOptions& p, const Device& device) {
  // --comm-backend mpi stages GPU tensors through the host: NCCL refuses two ranks on one GPU,
  // MPI does not.
  FLEXTP_CHECK(p.comm_backend != "nccl" || device.is_cuda(), "--comm-backend nccl needs --device cuda");
  FLEXTP_CHECK(p.attention != "cudnn" || device.is_cuda(), "--attention cudnn needs --device cuda");
  FLEXTP_CHECK(!p.bf16 || device.is_cuda(), "--bf16 needs --device cuda");
}

}  // namespace flextp
