// train: the flextp trainer. Reads a corpus, builds a GPT, trains it with AdamW (or SGD), logs,
// evaluates, saves checkpoints and samples text. Flags are listed by `train --help` and in
// docs/flags.md. Reading order: README -> this file (run() and its loop) -> trainer.h (one step
// and its report) -> nn/gpt.h -> nn/attention.h, nn/mlp.h -> core/.
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <sstream>

#include "tools/parse_flags.h"
#include "tools/tokenizer_flags.h"
#include "train_faults.h"
#include "train_options.h"
#include "train_log.h"
#include "train_stop.h"
#include "trainer.h"
#include "core/autograd.h"
#include "core/cuda/cuda_runtime_api.h"
#include "core/denormals.h"
#include "core/device_choice.h"
#include "core/temp_files.h"
#include "core/text_fields.h"
#include "data/batches.h"
#include "data/token_files.h"
#include "nn/checkpoint.h"
#include "nn/checkpoint_files.h"
#include "nn/generate.h"
#include "nn/hf_gpt2.h"
#include "nn/mfu.h"
#include "nn/unit_costs.h"
#include "nn/units.h"
#include "parallel/balance/balancer.h"
#include "parallel/balance/slowdown.h"
#include "parallel/comm/mpi_communicator.h"
#include "parallel/comm/nccl_communicator.h"
#include "parallel/comm/rank_agreement.h"
#include "parallel/dp/grid.h"
#include "parallel/dp/replica_agreement.h"

using namespace flextp;

namespace {

// Mean cross-entropy over the first `windows` non-overlapping windows of the stream, in order.
// `after_batch` runs after each batch (the watchdog's beat: an evaluation may outlast a step).
double evaluate(GPT& model, const std::vector<int32_t>& tokens, int64_t seq_len, int64_t windows,
                int64_t batch, const std::function<void()>& after_batch = [] {}) {
  NoGradGuard ng;
  model.set_training(false);
  double total = 0;
  for (int64_t first = 0; first < windows; first += batch) {
    int64_t count = std::min(batch, windows - first);
    Batch b = eval_batch(tokens, seq_len, first, count);
    total += model.loss(b.ids, b.targets).item() * static_cast<double>(count);
    after_batch();
  }
  model.set_training(true);
  return total / static_cast<double>(windows);
}

int64_t eval_window_count(const std::vector<int32_t>& tokens, const TrainOptions& o, const char* what) {
  int64_t available = eval_windows(tokens, o.seq_len);
  FLEXTP_CHECK(available > 0, what, " has ", tokens.size(), " tokens, fewer than seq_len + 1 = ",
               o.seq_len + 1);
  std::optional<int64_t> asked = checked_mul(o.eval_batches, o.batch);  // past 64 bits: all of them
  return asked ? std::min(available, *asked) : available;
}

GPTConfig model_config(const TrainOptions& o, const Tokenizer& tok, const CLI::App& app) {
  GPTConfig c;
  FLEXTP_CHECK(o.load.empty() || o.init_from_hf.empty(), "--load and --init-from-hf exclude each other: --load "
               "resumes a flextp run, --init-from-hf starts a new one from Hugging Face weights");
  FLEXTP_CHECK(o.seq_len <= kMaxModelSize, "--seq-len ", o.seq_len, " exceeds ", kMaxModelSize,
               ", the largest size flextp takes (positions are 32-bit)");
  std::optional<int64_t> step_tokens = checked_mul(o.batch, o.seq_len);
  FLEXTP_CHECK(step_tokens && *step_tokens <= kMaxModelSize, "--batch ", o.batch, " windows of --seq-len ", o.seq_len,
               " tokens exceed ", kMaxModelSize, " tokens in a step, the most flextp takes");
  const std::string& from = o.load.empty() ? o.init_from_hf : o.load;
  if (!o.load.empty()) {  // the checkpoint decides; flags given explicitly must agree
    c = read_checkpoint_config(o.load);
    std::map<std::string, std::string> extra = read_checkpoint_extra(o.load);
    auto was = extra.find("tokenizer");
    FLEXTP_CHECK(was == extra.end() || was->second == tok.name(), o.load, " was trained with --tokenizer ",
                 was->second, ", not ", tok.name());
  } else if (!o.init_from_hf.empty()) {
    c = with_flag("--init-from-hf", [&] { return read_hf_config(o.init_from_hf); });
    // GPT-2's own vocabulary read as bytes would train, and mean nothing.
    FLEXTP_CHECK(c.vocab_size != 50257 || tok.name() == std::string("gpt2"), "--init-from-hf ", o.init_from_hf,
                 " has GPT-2's vocabulary (50257 tokens): train it with --tokenizer gpt2");
    FLEXTP_CHECK(tok.vocab_size() <= c.vocab_size, "--init-from-hf ", o.init_from_hf, " has a vocabulary of ",
                 c.vocab_size, " tokens, fewer than the ", tok.vocab_size(), " of --tokenizer ", tok.name());
  }
  if (!from.empty()) {  // the checkpoint decides; flags given explicitly must agree
    for (auto [flag, value, saved] : {std::tuple{"--n-layer", o.n_layer, c.n_layer},
                                      {"--n-head", o.n_head, c.n_head}, {"--n-embd", o.n_embd, c.n_embd},
                                      {"--vocab", o.vocab, c.vocab_size},
                                      {"--n-positions", o.n_positions, c.n_positions}})
      FLEXTP_CHECK(app.count(flag) == 0 || value == saved, flag, " ", value, " differs from the ",
                   saved, " of checkpoint ", from);
    FLEXTP_CHECK(app.count("--mlp") == 0 || o.mlp == c.mlp, "--mlp ", o.mlp, " differs from the ", c.mlp,
                 " MLP of checkpoint ", from);
  } else {
    c.n_layer = o.n_layer, c.n_head = o.n_head, c.n_embd = o.n_embd;
    c.vocab_size = o.vocab ? o.vocab : tok.vocab_size();
    c.n_positions = o.n_positions ? o.n_positions : o.seq_len;
    c.mlp = o.mlp;
  }
  c.mlp_unit = o.mlp_unit, c.vocab_unit = o.vocab_unit, c.dropout = o.dropout, c.seed = o.seed;
  validate_model_flags(c);
  FLEXTP_CHECK(o.seq_len <= c.n_positions, "--seq-len ", o.seq_len, " exceeds n_positions ",
               c.n_positions, " (the position table)");
  return c;
}

// Weight decay applies to every parameter whose name contains none of the comma-separated parts.
void set_weight_decay(const std::vector<Parameter*>& params, const std::string& no_decay) {
  std::vector<std::string> parts;
  std::stringstream list(no_decay);
  for (std::string part; std::getline(list, part, ',');)
    if (!part.empty()) parts.push_back(part);
  for (Parameter* p : params) {
    p->weight_decay = true;
    for (const std::string& part : parts)
      if (p->name.find(part) != std::string::npos) p->weight_decay = false;
  }
}

// Entropy (nats) of the tokens' unigram distribution: the loss of a model that ignores context.
double unigram_entropy(const std::vector<int32_t>& tokens) {
  std::map<int32_t, double> count;
  for (int32_t t : tokens) count[t] += 1;
  double h = 0, n = static_cast<double>(tokens.size());
  for (const auto& [t, c] : count) h -= c / n * std::log(c / n);
  return h;
}

void check_vocab(const std::vector<int32_t>& tokens, int64_t vocab, const std::string& what) {
  for (int32_t t : tokens)
    FLEXTP_CHECK(t >= 0 && t < vocab, what, " holds token ", t, ", outside the vocabulary of ",
                 vocab, " (set --vocab)");
}

// The partition of every replica: --tp-weights and --tp-assign name the ranks of one
// tensor-parallel group (the same in every replica).
Partition initial_partition(const TrainOptions& o, const GPTConfig& c, const Grid& grid) {
  try {
    std::vector<UnitGroup> groups = unit_groups(c);
    Partition p = o.tp_weights.empty()
                      ? Partition::even(groups, grid.tp)
                      : Partition::proportional(
                            groups, with_flag("--tp-weights", [&] { return parse_tp_weights(o.tp_weights, grid.tp); }));
    for (const std::string& spec : o.tp_assign) with_flag("--tp-assign", [&] { apply_tp_assignment(p, groups, spec); });
    return p;
  } catch (const Error& e) {
    if (grid.dp == 1) throw;
    throw Error(std::string(e.what()) + " (--tp " + std::to_string(grid.tp) + ": --tp-weights and --tp-assign name the " +
                std::to_string(grid.tp) + " ranks of one tensor-parallel group, the same in each of the " +
                std::to_string(grid.dp) + " replicas)");
  }
}

// --lambda: a non-negative number or inf.
double parse_lambda(const std::string& s) {
  if (s == "inf" || s == "infinity") return std::numeric_limits<double>::infinity();
  std::optional<double> v = whole_double(s);
  FLEXTP_CHECK(v && *v >= 0 && std::isfinite(*v), "--lambda '", s, "' must be a number >= 0 or inf");
  return *v;
}

// Emulated stragglers (--straggler, --straggler-trace) for this run's ranks. Both name ranks of
// the world (a trace has a column per world rank); this rank's step clock, which counts ranks in
// its tensor-parallel group, gets its group's ranks, numbered from 0.
SlowdownSchedule slowdown(const TrainOptions& o, const Grid& grid) {
  std::vector<StragglerSpec> specs;
  for (const std::string& s : o.stragglers) specs.push_back(with_flag("--straggler", [&] { return parse_straggler(s); }));
  SlowdownSchedule world = with_flag("--straggler", [&] { return SlowdownSchedule(specs, grid.world()); });
  if (!o.straggler_trace.empty()) {
    FLEXTP_CHECK(std::ifstream(o.straggler_trace).good(), "cannot open --straggler-trace file ", o.straggler_trace);
    with_flag("--straggler-trace", [&] { world.load_trace(o.straggler_trace); });
  }
  return world.ranks(grid.world_rank_of(grid.dp_rank, 0), grid.tp);
}

// Times the communication primitives at this model's sizes and picks the cheapest of each.
CommCostModel communication_model(Communicator& comm, const TrainOptions& o, const GPTConfig& c,
                                  const UnitCosts& costs, Device device, int64_t micro_windows) {
  // The row-parallel reductions carry one micro-step's activations.
  double reduce_bytes = 4.0 * micro_windows * o.seq_len * c.n_embd;
  double transfer_bytes = costs.bytes.at(UnitRegistry(c).group(UnitKind::Head, 0)->name) * c.n_layer;  // about one head per layer moving
  CommCostModel m;
  if (comm.size() > 1)
    m = calibrate(comm, {4096, 65536, 1 << 20, static_cast<int64_t>(reduce_bytes)}, reduce_bytes, transfer_bytes,
                  5, device);
  with_flag("--comm", [&] { apply_comm_choice(m, o.comm); });
  return m;
}

// A resumed run keeps the seed it was started with: the batches and dropout masks of the steps
// still to come depend on it. Another --seed given explicitly is refused.
uint64_t resumed_seed(const TrainOptions& o, const CLI::App& app) {
  std::optional<uint64_t> saved = read_checkpoint_seed(o.load);
  if (!saved) return o.seed;  // no optimizer state: loading the checkpoint will say so
  FLEXTP_CHECK(app.count("--seed") == 0 || o.seed == *saved, "--seed ", o.seed, " differs from the seed ", *saved,
               " that ", o.load, " was trained with: a resumed run keeps its seed (its data order and dropout "
               "depend on it); leave --seed out");
  return *saved;
}

// What every rank must have read alike: compared across ranks before training.
std::vector<Fingerprint> input_fingerprints(const TrainOptions& o, const CLI::App& app, const Tokenizer& tok,
                                            const GPTConfig& c, const std::vector<int32_t>& train_tokens,
                                            const std::vector<int32_t>& val_tokens, const TrainState& loaded) {
  uint64_t vocabulary = fingerprint(tok.name());
  for (int32_t id = 0; id < tok.vocab_size(); ++id) {
    std::string piece = tok.decode({id});
    vocabulary = fingerprint(std::to_string(piece.size()) + ":" + piece, vocabulary);
  }
  // Every flag but those naming this rank's files and device (those may differ; the files'
  // contents are compared), and the model as built (a checkpoint's config, the seed it keeps).
  std::stringstream flags(app.config_to_str(true, false));
  std::string settings = c.str() + ", seed " + std::to_string(o.seed) + "\n";
  for (std::string line; std::getline(flags, line);) {
    std::string key = line.substr(0, line.find('='));
    if (key != "data" && key != "val-data" && key != "load" && key != "save" && key != "metrics" &&
        key != "export-hf" && key != "tokenizer-dir" && key != "straggler-trace" && key != "device")
      settings += line + "\n";
  }
  return {{"the training data", fingerprint(train_tokens.data(), train_tokens.size() * sizeof(int32_t))},
          {"the validation data", fingerprint(val_tokens.data(), val_tokens.size() * sizeof(int32_t))},
          {"the vocabulary", vocabulary},
          {"the configuration (model and flags)", fingerprint(settings)},
          {"the step of the loaded checkpoint", fingerprint(std::to_string(loaded.step))},
          {"the loaded checkpoint (its run and save ids)", fingerprint(loaded.run_id + "/" + loaded.save_id)}};
}

// The whole corpus, and the training and validation tokens taken from it (or from --val-data).
struct Corpus {
  std::vector<int32_t> all, train, val;
};

Corpus read_corpus(const TrainOptions& o, const Tokenizer& tok) {
  Corpus c;
  c.all = o.data.empty() ? tok.encode(with_flag("no --data", [] { return default_corpus_text(); })) : load_tokens(o.data, tok);
  if (o.val_data.empty())
    split_tokens(c.all, o.val_fraction, c.train, c.val);
  else
    c.train = c.all, c.val = load_tokens(o.val_data, tok);
  return c;
}

// Busy threads beside this rank where --contend names it; on a GPU, busy kernels on its GPU.
std::unique_ptr<Contention> contention(const TrainOptions& o, const Communicator& world, Device device) {
  std::unique_ptr<Contention> out;
  for (const std::string& spec : o.contend) {
    ContendSpec c = with_flag("--contend", [&] { return parse_contend(spec); });
    FLEXTP_CHECK(c.rank < world.size(), "--contend names rank ", c.rank, " but there are only ", world.size());
    if (c.rank == world.rank())
      out = with_flag("--contend", [&] {
        return std::make_unique<Contention>(c, device.is_cuda() ? std::optional<int>(device.index) : std::nullopt);
      });
  }
  return out;
}

std::unique_ptr<Optimizer> make_optimizer(const TrainOptions& o) {
  if (o.optimizer == "sgd") return std::make_unique<SGD>(SGDOptions{o.momentum, o.weight_decay});
  AdamWOptions adamw;
  adamw.weight_decay = o.weight_decay;
  return std::make_unique<AdamW>(adamw);
}

BalanceOptions balance_options(const TrainOptions& o) {
  BalanceOptions bo;
  bo.policy = o.balance;
  bo.planner = {o.horizon, o.min_gain};
  bo.trials.enabled = o.closed_loop;
  bo.window = static_cast<int>(o.monitor_window);
  bo.resize.priority = o.priority;
  bo.lambda = parse_lambda(o.lambda);
  bo.resize.seed = o.seed;
  return bo;
}

// --eval-only: the loss of the loaded checkpoint on the whole of --data (no split), in windows
// from the file's start.
int evaluate_checkpoint(const TrainOptions& o, GPT& model, const Corpus& corpus, bool lead) {
  FLEXTP_CHECK(!o.load.empty(), "--eval-only needs --load CHECKPOINT");
  int64_t windows = eval_window_count(corpus.all, o, "--data");
  double loss = evaluate(model, corpus.all, o.seq_len, windows, o.batch);
  if (lead)
    std::printf("eval %s: %lld windows of %lld tokens from the start of %s: loss %.6f\n", o.load.c_str(),
                (long long)windows, (long long)o.seq_len, o.data.empty() ? "the default corpus" : o.data.c_str(), loss);
  return 0;
}

void print_run_header(TrainLog& log, const TrainOptions& o, const GPTConfig& c, GPT& model,
                      const Corpus& corpus, Device device) {
  log.say("flextp: %s, %lld parameters, %lld train / %lld val tokens, batch %lld x %lld, on %s%s\n", c.str().c_str(),
          (long long)model_parameters(model), (long long)corpus.train.size(), (long long)corpus.val.size(), (long long)o.batch,
          (long long)o.seq_len, device.str().c_str(),
          !device.is_cuda() ? (denormals_flushed() ? " (denormals flushed to zero)" : "")
          : o.bf16          ? " (bf16 matmuls)"
          : o.tf32          ? " (TF32 matmuls)"
                            : "");
  log.say("unigram entropy of the training tokens: %.4f nats (a context-free model's loss)\n",
          unigram_entropy(corpus.train));
}

// Setting up (data, model, optimizer, checkpoint, balancer), then the loop: a step, its report
// to the log and the metrics, evaluation and periodic checkpoints; at the end the final save,
// the export and a sample.
// `split(color)`: a communicator over the world's ranks of that color, on the world's backend.
int run(const TrainOptions& options, const CLI::App& app, Communicator& world, Device device,
        const std::function<std::unique_ptr<Communicator>(int color)>& split) {
  TrainOptions o = options;
  flush_denormals();  // on this thread and OpenMP's (core/denormals.h)
  if (world.rank() == 0) {  // the one rank that writes files: before anything else, not at the end
    if (!o.save.empty()) check_checkpoint_path(o.save, "--save");
    if (!o.export_hf.empty()) check_export_dir(o.export_hf, "--export-hf");
  }
  if (!o.load.empty() && !o.eval_only) o.seed = resumed_seed(o, app);
  // The grid: replicas of tp consecutive ranks. One replica (the default) uses the world as it is.
  const Grid grid = with_flag("--tp", [&] { return Grid::of(world.size(), world.rank(), static_cast<int>(o.tp)); });
  std::unique_ptr<Communicator> tp_group, dp_group;
  if (grid.dp > 1) {
    tp_group = split(grid.dp_rank);  // in world-rank order: tensor rank tp_rank
    dp_group = split(grid.tp_rank);  // in world-rank order: replica dp_rank
  }
  const int64_t share = with_flag("--batch", [&] { return grid.windows(o.batch).second; });
  const int64_t micro_windows = share / with_flag("--micro-batch", [&] { return micro_steps(share, o.micro_batch); });
  // Every collective of the run goes through the step clock: it measures compute and waiting,
  // and emulates a slower rank when asked to.
  StepClock comm(tp_group ? *tp_group : world, slowdown(o, grid));
  comm.set_sync_gpu(device.is_cuda());
  std::unique_ptr<Contention> contended = contention(o, world, device);
  const bool lead = world.rank() == 0;  // rank 0 alone prints and writes files
  const bool writer = grid.dp_rank == 0;  // replica 0 writes checkpoints and exports (rank 0 the files)
  std::unique_ptr<Tokenizer> tokenizer = tokenizer_from_flags(o);
  const Tokenizer& tok = *tokenizer;
  Corpus corpus = read_corpus(o, tok);
  GPTConfig c = model_config(o, tok, app);
  check_vocab(corpus.all, c.vocab_size, o.data.empty() ? "the default corpus" : o.data);
  check_vocab(corpus.val, c.vocab_size, o.val_data.empty() ? "the validation split" : o.val_data);
  if (!o.export_hf.empty()) with_flag("--export-hf", [&] { check_gpt2_exportable(c); });  // before training

  Partition partition = initial_partition(o, c, grid);
  GPT model(c, LocalUnits::of_rank(c, partition, comm.rank()), &comm);
  model.to(device);  // initialised on the host (the same numbers on every device), then moved
  model.set_numerics(numerics_of(matmul_precision_of(o.tf32, o.bf16), o.attention));
  set_weight_decay(model.parameters(), o.no_decay);
  model.set_imputation(o.impute == "stale" ? Impute::Stale : Impute::Zero);
  model.set_tp_chunks(o.tp_chunks);
  std::unique_ptr<Optimizer> opt = make_optimizer(o);
  TrainState loaded;
  if (!o.load.empty()) loaded = load_checkpoint(o.load, model, o.eval_only ? nullptr : opt.get());
  if (!o.init_from_hf.empty()) with_flag("--init-from-hf", [&] { import_hf(o.init_from_hf, model); });
  const int64_t start = loaded.step;
  // Before the first collective that depends on them.
  check_ranks_agree(world, input_fingerprints(o, app, tok, c, corpus.train, corpus.val, loaded));
  if (o.eval_only) return evaluate_checkpoint(o, model, corpus, lead);
  FLEXTP_CHECK(o.steps >= start, "--steps ", o.steps, " is behind step ", start, " of ", o.load,
               ": nothing to train (--steps counts the checkpoint's steps too; give more)");
  if (!o.load.empty() && lead)
    std::printf("resumed %s at step %lld with its seed %llu%s\n", o.load.c_str(), (long long)start,
                (unsigned long long)o.seed, o.steps == start ? ": nothing to train (--steps is its step)" : "");
  FaultHook faults(o.fault_nan_steps, o.fault_kill, o.fault_hang, world.rank(), world.size());
  BatchSampler sampler(&corpus.train, o.batch, o.seq_len, o.seed);
  int64_t val_windows = corpus.val.empty() ? 0 : eval_window_count(corpus.val, o, "the validation data");
  TrainLog log(lead, o, device.is_cuda());
  print_run_header(log, o, c, model, corpus, device);
  if (grid.dp > 1)
    log.say("data x tensor parallel: %d replicas of %d rank(s) over %s (rank %d: %s); %lld windows per replica per "
            "step in micro-steps of %lld; units per rank of each replica: %s\n",
            grid.dp, grid.tp, comm.backend(), world.rank(), grid.str().c_str(), (long long)share,
            (long long)micro_windows, partition.str().c_str());
  else if (comm.size() > 1)
    log.say("tensor parallel: %d ranks over %s; units per rank: %s\n", comm.size(), comm.backend(),
            partition.str().c_str());
  if (grid.dp == 1 && micro_windows < share)
    log.say("micro-batches: %lld windows each, %lld per step\n", (long long)micro_windows, (long long)share);
  UnitCosts costs = gpt_unit_costs(c, share, o.seq_len, static_cast<int>(opt->slot_names().size()));
  CommCostModel comm_model = communication_model(comm.untimed(), o, c, costs, device, micro_windows);
  if (dp_group) share_comm_model(*dp_group, comm_model);  // the replicas' balancers weigh moves alike
  comm.set_reduce_method(comm_model.reduce);
  if (comm.size() > 1) log.say("communication (fitted on this communicator):\n%s", comm_model.table().c_str());
  Balancer balancer(comm.untimed(), unit_groups(c), partition, costs, comm_model, balance_options(o));
  Watchdog watchdog(world.size() > 1 ? o.rank_timeout : 0, world.rank());
  // Rank 0 writes files while the other ranks wait for it, for as long as the disk takes: the
  // watchdog is off on every rank, and the ranks leave together so that none waits in the next
  // step's collectives with its watchdog on. (A killed rank still ends the job through mpirun.)
  auto unwatched = [&](const auto& work) {
    watchdog.pause();
    work();
    world.barrier();
    watchdog.resume();
  };
  // A resumed run keeps its checkpoint's identity; a new one (or one resumed from files older than
  // run ids) draws its own.
  TrainState state{start, o.seed, {{"tokenizer", tok.name()}}, loaded.run_id.empty() ? random_hex_id() : loaded.run_id};
  auto save = [&](const std::string& path, int64_t step) {
    state.step = step;
    unwatched([&] {
      try {
        if (lead) remove_stale_checkpoint_temporaries(o.save);  // of saves killed mid-write, any step's
        if (writer) save_checkpoint(path, model, opt.get(), state, &comm);
      } catch (const Error& e) {  // a full disk: files are replaced by rename, so the old ones stand
        FLEXTP_FAIL("cannot save checkpoint ", path, " (step ", step, "): ", e.what(),
                    "; the files of any earlier save are untouched");
      }
    });
    log.say("saved %s (step %lld)\n", path.c_str(), (long long)step);
  };
  // --sample and --sample-every: every rank takes part in the forward passes, rank 0 prints.
  auto print_sample = [&](int64_t tokens, const std::string& title) {
    std::vector<int32_t> prompt = tok.encode(o.prompt.empty() ? "\n" : o.prompt);
    std::vector<int32_t> out;
    unwatched([&] { out = generate(model, prompt, {tokens, o.temperature, o.top_k, o.seed}); });
    model.set_training(true);  // generate() left it in evaluation mode (no dropout)
    log.clear_line();
    log.say("---- %s ----\n%s\n----------------\n", title.c_str(), tok.decode(out).c_str());
  };
  Trainer trainer(o, model, *opt, comm, balancer, watchdog, sampler, faults, [&](const StepReport& r) { log.skipped(r); },
                  {grid, dp_group.get(), static_cast<int64_t>(o.dp_bucket_mb * (1 << 20)), &world});

  log.start(start, lead ? mfu_basis(model, o.seq_len, device, matmul_precision_of(o.tf32, o.bf16), world.size())
                        : MfuBasis{});
  int stopped_by = 0;  // a signal: every rank stops after the same step
  int64_t done = start, ran = 0, skipped = 0;  // steps of this run
  for (int64_t step = start; step < o.steps && !stopped_by; ++step) {
    fault_signal(world.rank(), step + 1);
    StepReport r = trainer.step(step, stop_signal);
    done = r.step;
    stopped_by = r.stop_signal;
    ++ran, skipped += r.skipped;
    log.step(r);
    if (val_windows && ((o.eval_every && r.step % o.eval_every == 0) || r.last)) {
      r.val_loss = evaluate(model, corpus.val, o.seq_len, val_windows, micro_windows, [&] { watchdog.beat(r.step); });
      log.validation(r);
    }
    log.metrics(r);
    if (o.sample_every && r.step % o.sample_every == 0 && !r.last)
      print_sample(o.sample ? o.sample : 64, "sample at step " + std::to_string(r.step));
    if (!o.save.empty() && o.save_every && r.step % o.save_every == 0 && !r.last && !r.skipped) {
      log.clear_line();
      save(periodic_checkpoint_path(o.save, r.step), r.step);
      if (lead && o.keep_last > 0) remove_old_checkpoints(o.save, o.keep_last, state.run_id, r.step);
    }
    std::fflush(stdout);
  }
  log.finish();
  // The weights are those the run started from: saving them as a later step would pass off a
  // run that learnt nothing (NaN inputs, a NaN --lr) as a good one.
  FLEXTP_CHECK(ran == 0 || skipped < ran, "every one of the ", ran, " steps of this run was skipped (a non-finite loss ",
               "or gradient)", o.save.empty() ? std::string() : "; nothing was saved over " + o.save);
  watchdog.beat(o.steps + 1);
  if (stopped_by && done < o.steps) {  // the steps done, saved; no export or sample of a run cut short
    if (!o.save.empty()) save(o.save, done);
    log.say("stopped by %s after step %lld%s\n", signal_name(stopped_by), (long long)done,
            o.save.empty() ? " (nothing saved: no --save)" : ("; resume with --load " + o.save).c_str());
    std::fflush(stdout);
    return 128 + stopped_by;
  }
  if (!o.save.empty()) save(o.save, std::max(start, o.steps));
  if (!o.export_hf.empty()) {
    // A model on GPT-2's vocabulary carries GPT-2's tokenizer files.
    bool gpt2_vocabulary = tok.name() == std::string("gpt2") && c.vocab_size == tok.vocab_size();
    std::string gpt2_dir = gpt2_vocabulary ? gpt2_dir_from_flags(o.tokenizer_dir) : "";
    unwatched([&] {
      if (writer) with_flag("--export-hf", [&] { export_hf(o.export_hf, model, &comm, gpt2_dir); });
    });
    log.say("exported %s/config.json and %s/model.safetensors%s (transformers: GPT2LMHeadModel.from_pretrained)\n",
            o.export_hf.c_str(), o.export_hf.c_str(), gpt2_vocabulary ? " with GPT-2's tokenizer files" : "");
  }
  if (o.sample > 0) print_sample(o.sample, "sample");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Under mpirun (or srun) each process is one tensor-parallel rank of one replica (--tp); alone,
  // no launcher is needed.
  std::unique_ptr<MpiRuntime> mpi;
  if (launched_by_mpi()) mpi = std::make_unique<MpiRuntime>(&argc, &argv);
  CLI::App app{"flextp train: a GPT trained by flextp's own tensor and autograd engine"};
  TrainOptions o;
  add_train_flags(app, o);
  // --help ends here too (status 0); a refused flag reads like every other error, status 1.
  if (std::optional<int> status = parse_flags(app, argc, argv, "train")) {
    if (mpi && *status != 0) MpiRuntime::abort_all(*status);
    return *status;
  }
  install_stop_signals();
  std::unique_ptr<Communicator> comm;
  try {
    check_flag_combinations(o);
    Device device = with_flag("--device " + o.device, [&] { return choose_device(o.device); });
    // Ranks on GPUs talk over NCCL (device memory, no host staging); MPI only brings them up.
    // --comm-backend mpi stages GPU tensors through the host instead: NCCL refuses two ranks
    // on one GPU, MPI does not.
    FLEXTP_CHECK(o.comm_backend != "nccl" || device.is_cuda(), "--comm-backend nccl needs --device cuda");
    FLEXTP_CHECK(o.attention != "cudnn" || device.is_cuda(), "--attention cudnn needs --device cuda");
    FLEXTP_CHECK(!(o.bf16 && o.tf32), "--bf16 and --tf32 exclude each other: pick one matmul precision");
    FLEXTP_CHECK(!o.bf16 || device.is_cuda(), "--bf16 needs --device cuda");
    bool nccl = o.comm_backend == "nccl" || (o.comm_backend == "auto" && device.is_cuda());
    if (mpi && nccl)
      comm = make_nccl_communicator(device.index);
    else
      comm = mpi ? make_mpi_communicator() : make_single_process_communicator();
    // The groups of a data x tensor parallel grid, on the same backend: NCCL inside groups and
    // across them on GPUs.
    auto split = [&](int color) -> std::unique_ptr<Communicator> {
      return nccl ? make_nccl_communicator(device.index, color) : make_mpi_communicator(color);
    };
    return run(o, app, *comm, device, split);
  } catch (const std::exception& e) {
    std::fflush(stdout);  // the log lines before the error come first
    if (comm && comm->size() > 1)
      std::fprintf(stderr, "train: error (rank %d): %s\n", comm->rank(), e.what());
    else
      std::fprintf(stderr, "train: error: %s\n", e.what());
    // An error on one rank must not leave the others waiting in a collective.
    if (mpi) MpiRuntime::abort_all(1);
    return 1;
  }
}
