#pragma once
// The flags of `train` (docs/flags.md lists them), in one struct.
#include <CLI/CLI.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "data/tokenizer.h"
#include "nn/config.h"
#include "optim/optimizer.h"
#include "optim/schedule.h"
#include "parallel/balance/balance_options.h"
#include "parallel/balance/planner.h"
#include "parallel/balance/resizer.h"

namespace flextp {

// Where a library type already has a default, the flag takes it from there: one source for each.
namespace library_defaults {
inline const GPTConfig model;
inline const PlannerOptions planner;
inline const ResizeOptions resize;
inline const SGDOptions sgd;
inline const CosineSchedule schedule;
}  // namespace library_defaults

struct TrainOptions {
  // model (n_positions 0: --seq-len; vocab 0: the tokenizer's)
  int64_t n_layer = library_defaults::model.n_layer, n_head = library_defaults::model.n_head,
          n_embd = library_defaults::model.n_embd, seq_len = 128, n_positions = 0, vocab = 0;
  int64_t mlp_unit = library_defaults::model.mlp_unit, vocab_unit = library_defaults::model.vocab_unit;
  std::string mlp = library_defaults::model.mlp;
  double dropout = library_defaults::model.dropout;
  // run
  std::string data, val_data, save, load, init_from_hf, metrics, optimizer = "adamw", prompt = "\n";
  std::string no_decay = "bias,ln_,wpe";
  int64_t batch = 16, steps = 600, warmup = 50, eval_every = 100, eval_batches = 10, log_every = 10,
          save_every = 0, sample = 0, sample_every = 0, top_k = 40;
  double lr = library_defaults::schedule.max_lr, min_lr = library_defaults::schedule.min_lr, weight_decay = 0.1,
         grad_clip = 1.0, val_fraction = 0.1, temperature = 0.8, momentum = library_defaults::sgd.momentum;
  uint64_t seed = library_defaults::model.seed;
  bool eval_only = false;
  std::string device = "cpu";  // cpu, cuda (one GPU per local rank) or cuda:N
  bool tf32 = false, bf16 = false;
  std::string attention = "auto";
  std::string comm_backend = "auto";  // auto: NCCL for GPU ranks under mpirun, MPI otherwise
  std::string tokenizer = "byte", tokenizer_dir, export_hf;
  int64_t keep_last = 0, max_bad_steps = 10;
  double rank_timeout = 600;  // seconds a collective may wait before a rank gives up on its peers
  std::vector<int64_t> fault_nan_steps;  // testing: poison the loss at these steps (1-based)
  std::string fault_kill;                // testing: RANK:STEP kills that rank in the middle of the step
  std::string fault_hang;                // testing: RANK:STEP stops that rank there (alive, silent)
  // the process grid: tp ranks per tensor-parallel group (0: all), the rest data parallel
  int64_t tp = 0, micro_batch = 0;  // micro_batch 0: a replica's whole share at once
  int64_t tp_chunks = 1;            // batch chunks whose tensor-parallel all-reduces overlap (GPT::set_tp_chunks)
  double dp_bucket_mb = 25;         // data-parallel gradient buckets, MB
  std::string dp_shares = "speed";  // windows per replica: "speed" (balanced by speed) or "even"
  // tensor parallelism and balancing
  std::string tp_weights, straggler_trace, comm = "auto", impute = "zero";
  std::vector<std::string> tp_assign, stragglers, contend;
  // balancing: the defaults are BalanceOptions' (parallel/balance/balance_options.h)
  std::string balance = BalanceOptions{}.policy, priority = BalanceOptions{}.resize.priority;
  int64_t horizon = BalanceOptions{}.planner.horizon, monitor_window = BalanceOptions{}.window;
  double min_gain = BalanceOptions{}.planner.min_gain;
  bool closed_loop = BalanceOptions{}.trials.enabled;
  std::string model_off;  // harness: refinements of the planner's model switched off (an ablation)
  std::string lambda = [] {  // a number or inf
    std::ostringstream text;
    text << BalanceOptions{}.lambda;
    return text.str();
  }();
};

void add_train_flags(CLI::App& app, TrainOptions& o);

// Runs f, which reads what `flag` gave. The library's errors name the problem in its own terms;
// this puts the flag in front, so the user knows what to change:
//   --straggler: straggler '1:fast' (RANK:FACTOR[:FROM[:TO]]): 'fast' is not a number
template <typename F>
auto with_flag(const std::string& flag, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Error& e) {
    throw Error(flag + ": " + e.what());
  }
}

// GPTConfig::validate, its errors naming the flags where it names the settings they set
// (n_embd -> --n-embd): "--n-embd 10 is not divisible by --n-head 4".
void validate_model_flags(const GPTConfig& c);

// Refuses flags that could not take effect (--save-every without --save, --keep-last without
// --save-every, --eval-only with --save or --export-hf): a flag that does nothing says so.
void check_flag_combinations(const TrainOptions& o);

// The tokenizer --tokenizer and --tokenizer-dir name.
std::unique_ptr<Tokenizer> tokenizer_from_flags(const TrainOptions& o);

}  // namespace flextp
