#include "train/flags.h"

#include <cmath>
#include <limits>
#include <optional>

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

bool run_name(const std::string& s) {
  return !s.empty() && s.size() <= 255 && s[0] != '.' &&
         s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == std::string::npos;
}

void declare_model(OptionTable& t, GPTConfig& m) {
  t.group("Model");
  t.add("--n-layer", m.n_layer, "transformer blocks").check(positive).model("n_layer");
  t.add("--n-head", m.n_head, "attention heads per block").check(positive).model("n_head");
  t.add("--n-embd", m.n_embd, "channels (divisible by --n-head)").check(positive).model("n_embd");
  t.add("--n-positions", m.n_positions, "position table size").check(positive).shown_default("--seq-len")
      .model("n_positions");
  t.add("--vocab", m.vocab_size, "vocabulary size").check(positive).shown_default("the tokenizer's").model("vocab_size");
  t.add("--mlp", m.mlp, "MLP of every block: " + joined(mlp_kind_names(), " or ")).check(CLI::IsMember(mlp_kind_names()))
      .model("mlp");
  t.add("--mlp-unit", m.mlp_unit, "MLP neurons per tensor-parallel unit").check(positive).model("mlp_unit");
  t.add("--vocab-unit", m.vocab_unit, "vocabulary rows per tensor-parallel unit").check(positive).model("vocab_unit");
  t.add("--dropout", m.dropout, "dropout probability").check(within(0, 0.99)).model("dropout");
}

void declare_data(OptionTable& t, DataOptions& d) {
  t.group("Data");
  t.add("--data", d.data, "training text file or llm.c shard (glob)").shown_default("fortunes");
  t.add("--val-data", d.val_data, "validation data").shown_default("the last --val-fraction");
  t.add("--val-fraction", d.val_fraction, "share of --data held out").check(within(0, 0.9));
  t.add("--tokenizer", d.tokenizer, "byte (256 ids, no files) or gpt2 (GPT-2's BPE, 50257 ids)")
      .check(CLI::IsMember({"byte", "gpt2"})).recorded(Resume::MustMatch);
  t.add("--tokenizer-dir", d.tokenizer_dir, "--tokenizer gpt2: directory holding encoder.json and vocab.bpe")
      .shown_default("the cache of scripts/get_gpt2_tokenizer.py, ~/.cache/flextp/gpt2");
  t.add("--batch", d.batch, "windows per optimizer step, over all replicas").check(positive);
  t.add("--seq-len", d.seq_len, "tokens per training window").check(positive);
}

void declare_optimization(OptionTable& t, OptimizationOptions& o, uint64_t& seed) {
  t.group("Optimisation");
  t.add("--steps", o.steps, "total optimizer steps").check(non_negative);
  t.add("--lr", o.schedule.max_lr, "peak learning rate").check(positive).optimizer(Resume::MayChange);
  t.add("--min-lr", o.schedule.min_lr, "final learning rate of the cosine").check(non_negative)
      .optimizer(Resume::MayChange);
  t.add("--warmup", o.schedule.warmup, "linear warm-up steps").check(non_negative).optimizer(Resume::MayChange);
  t.flag("--reset-schedule", o.reset_schedule,
         "with --load: stretch the learning-rate schedule to --steps (default: keep the checkpoint's)");
  t.add("--optimizer", o.optimizer, "adamw or sgd").check(CLI::IsMember({"adamw", "sgd"}))
      .optimizer(Resume::MustMatch);
  t.add("--weight-decay", o.weight_decay, "decoupled weight decay").check(non_negative).optimizer(Resume::MayChange);
  t.add("--no-decay", o.no_decay, "parameters without weight decay: name parts, comma-separated")
      .optimizer(Resume::MayChange);
  t.add("--momentum", o.momentum, "SGD momentum").check(within(0, 1.0)).optimizer(Resume::MayChange);
  t.add("--grad-clip", o.grad_clip, "global gradient-norm limit (0: off)").check(non_negative)
      .optimizer(Resume::MayChange);
  t.add("--max-bad-steps", o.max_bad_steps, "stop after N steps in a row with a non-finite loss or gradient")
      .check(positive);
  t.add("--seed", seed, "seed of initialisation, data order, dropout, sampling").recorded(Resume::MustMatch);
}

void declare_parallel(OptionTable& t, ParallelOptions& p) {
  t.group("Devices and parallelism");
  t.add("--device", p.device, "cpu, cuda (each rank takes the GPU of its local rank) or cuda:N");
  t.add("--comm-backend", p.comm_backend, "auto (NCCL when --device cuda under mpirun), mpi or nccl")
      .check(CLI::IsMember({"auto", "mpi", "nccl"}));
  t.flag("--tf32", p.tf32, "GPU: f32 matmuls on TF32 tensor cores (faster, 10-bit mantissa inputs)");
  t.flag("--bf16", p.bf16,
         "GPU: matmuls on bf16 tensor cores (inputs rounded to bf16, f32 sums; weights, activations and AdamW stay "
         "f32)");
  t.add("--attention", p.attention,
        "GPU attention: own (f32 kernels), cudnn (cuDNN's fused flash attention, bf16 inputs) or auto (cudnn with "
        "--bf16, else own)")
      .check(CLI::IsMember({"auto", "own", "cudnn"}));
  t.add("--tp", p.tp, "ranks per tensor-parallel group (consecutive ranks): the rest is data parallel")
      .check(positive).shown_default("all ranks");
  t.add("--placement", p.placement,
        "rank order: host (a host's ranks consecutive, so a --tp group stays on one host) or launcher (mpirun's "
        "order)")
      .check(CLI::IsMember({"host", "launcher"}));
  t.add("--micro-batch", p.micro_batch,
        "windows per forward/backward; a replica accumulates its share of --batch in micro-steps")
      .check(positive).shown_default("a replica's share");
  t.add("--dp-bucket-mb", p.dp_bucket_mb, "data-parallel gradient all-reduces in buckets of about this many MB")
      .check(positive);
  t.add("--dp-shares", p.dp_shares, "windows of a step per replica: speed (in proportion to each replica's speed) or even")
      .check(CLI::IsMember({"speed", "even"}));
  t.add("--tp-weights", p.tp_weights, "units per rank in proportion, e.g. 3,1").shown_default("even");
  t.add("--tp-assign", p.tp_assign, "explicit units per rank: KIND[@LAYER]=UNITS|UNITS..., repeatable")
      .shown_default("none");
  t.add("--comm", p.comm, "auto, allreduce, rs-ag, p2p or alltoallv")
      .check(CLI::IsMember({"auto", "allreduce", "rs-ag", "p2p", "alltoallv"}));
  t.add("--rank-timeout", p.rank_timeout, "seconds without progress after which a rank assumes a peer died")
      .check(positive);
}

void declare_balancing(OptionTable& t, BalanceOptions& o) {
  t.group("Balancing");
  t.add("--balance", o.policy, "balancing policy: " + joined(policy_names(), ", ")).check(CLI::IsMember(policy_names()));
  t.parsed("--lambda", o.lambda, lambda_value, "a number >= 0 or inf",
           "hybrid: ms per step that skipping the whole model is worth (inf: never skip)");
  t.add("--priority", o.resize.priority, "which units resizing skips first: taylor, norm or random")
      .check(CLI::IsMember({"taylor", "norm", "random"}));
  t.add("--horizon", o.planner.horizon,
        "steps a migration must pay for itself in; also the resizing episode length at which the hybrid prices a "
        "skipped step double")
      .check(positive);
  t.add("--min-gain", o.planner.min_gain, "least predicted speed-up that triggers a migration").check(within(0, 1.0));
  t.add("--monitor-window", o.window, "EMA span of the speed monitor, steps").check(positive);
  t.flag("!--open-loop", o.trials.enabled,
         "act on the model alone: do not judge moves and resizes by the steps after them, nor undo them");
}

void declare_checkpoints(OptionTable& t, CheckpointOptions& c) {
  t.group("Checkpoints");
  t.add("--save", c.save, "checkpoint path (weights; optimizer state in PATH.state)")
      .shown_default("runs/NAME/model.safetensors");
  t.add("--name", c.name,
        "name of the run directory runs/NAME/ that a run without --save saves into: letters, digits, '.', '-' and "
        "'_', not starting with '.'")
      .check(CLI::Validator(
          [](std::string& s) {
            return run_name(s) ? "" : "'" + s + "' is not a run name (letters, digits, '.', '-' and '_', not starting "
                                            "with '.', at most 255): the run goes into runs/NAME/; --save PATH saves "
                                            "elsewhere";
          },
          ""))
      .shown_default("the start time, YYYYMMDD-HHMMSS");
  t.flag("--no-save", c.no_save, "keep no checkpoint (a run without --save saves into runs/NAME/)");
  t.add("--save-every", c.save_every, "also save PATH-stepNNNNNN every N steps").check(non_negative);
  t.add("--keep-last", c.keep_last, "--save-every: keep only the newest N periodic checkpoints (0: all)")
      .check(non_negative);
  t.add("--snapshot-dir", c.snapshot_dir,
        "recovery after losing a host: every --snapshot-every steps each rank writes its shard into DIR, a directory "
        "on its own host (the same path on every host), and a copy into the next host's")
      .shown_default("none");
  t.add("--snapshot-every", c.snapshot_every, "--snapshot-dir: steps between snapshots")
      .check(positive).shown_default(std::to_string(kDefaultSnapshotEvery));
  t.flag("--resume-snapshot", c.resume_snapshot,
         "start from the newest complete snapshot that the hosts of this run hold in --snapshot-dir (none: from "
         "--load, --init-from-hf or step 0, as without it); scripts/launch --restarts adds it");
  t.add("--load", c.load, "resume from (or, with --eval-only, evaluate) a checkpoint").shown_default("none");
  t.add("--init-from-hf", c.init_from_hf,
        "start from a Hugging Face GPT-2 directory (config.json + model.safetensors; at step 0, new optimizer)")
      .shown_default("none");
  t.add("--export-hf", c.export_hf, "at the end, write DIR/config.json + DIR/model.safetensors for transformers")
      .shown_default("none");
}

void declare_output(OptionTable& t, OutputOptions& o) {
  t.group("Output: logs, evaluation, samples");
  t.add("--log-every", o.log_every, "print every N steps").check(positive);
  t.add("--metrics", o.metrics, "append one JSON line per step to this file").shown_default("none");
  t.add("--eval-every", o.eval_every, "validation every N steps (0: only at the end)").check(non_negative);
  t.add("--eval-batches", o.eval_batches, "validation batches (of --batch windows)").check(positive);
  t.flag("--eval-only", o.eval_only, "print the validation loss of --load on --data and exit");
  t.add("--sample", o.sample, "generate N tokens at the end").check(non_negative);
  t.add("--sample-every", o.sample_every, "also print a sample every N steps (--sample tokens, 64 if not given)")
      .check(non_negative);
  t.add("--prompt", o.prompt, "text the sample continues").shown_default("a newline");
  t.add("--temperature", o.temperature, "sampling temperature (0: greedy)").check(non_negative);
  t.add("--top-k", o.top_k, "sample among the k likeliest (0: all)").check(non_negative);
}

void declare_harness(OptionTable& t, HarnessOptions& h) {
  t.group("Testing harness (emulated faults and slow ranks, to test and measure flextp; not for training runs)");
  t.add("--fault-nan-steps", h.fault_nan_steps, "make the loss NaN at these steps (1-based), e.g. 3,4")
      .delimiter(',').shown_default("none");
  t.add("--fault-kill", h.fault_kill, "RANK:STEP, that rank kills itself mid-step").shown_default("none");
  t.add("--fault-hang", h.fault_hang, "RANK:STEP, that rank stops mid-step (alive, silent)").shown_default("none");
  t.add("--straggler", h.stragglers, "slow a rank: RANK:FACTOR[:FROM[:TO]], repeatable").shown_default("none");
  t.add("--straggler-trace", h.straggler_trace, "CSV of per-step slowdown factors per rank").shown_default("none");
  t.add("--contend", h.contend, "busy threads beside a rank: RANK:THREADS[:BUSY/PERIOD] (ms), repeatable")
      .shown_default("none");
}

}  // namespace

OptionTable add_train_flags(CLI::App& app, TrainOptions& o) {
  app.option_defaults()->always_capture_default();
  for (CLI::Option* general :
       {app.get_help_ptr(),
        app.set_config("--config", "", "read flags from a TOML or INI file (KEY = VALUE, KEY a flag without its "
                       "dashes); flags on the command line override it"),
        app.set_version_flag("--version", version_text()),
        app.add_flag("--debug", o.debug, "a failure's message also names the source line it comes from"),
        app.add_flag("--print-config", o.print_config,
                     "print the options given (on the command line and in --config) as KEY=VALUE, and exit")})
    general->group("General");
  app.allow_config_extras(CLI::config_extras_mode::error);
  OptionTable table(app);
  declare_model(table, o.model);
  declare_data(table, o.data);
  declare_optimization(table, o.optimization, o.seed);
  declare_parallel(table, o.parallel);
  declare_balancing(table, o.balancing);
  declare_checkpoints(table, o.checkpoint);
  declare_output(table, o.output);
  declare_harness(table, o.harness);
  return table;
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
