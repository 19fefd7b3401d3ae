#pragma once
// The flags of `train` (README lists them), in one struct.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "core/error.h"

namespace flextp {

struct TrainOptions {
  // model
  int64_t n_layer = 4, n_head = 4, n_embd = 128, seq_len = 128, n_positions = 0, vocab = 0;
  int64_t mlp_unit = 32, vocab_unit = 64;
  double dropout = 0.0;
  // run
  std::string data, val_data, save, load, metrics, optimizer = "adamw", prompt = "\n";
  std::string no_decay = "bias,ln_,wpe";
  int64_t batch = 16, steps = 600, warmup = 50, eval_every = 100, eval_batches = 10, log_every = 10,
          save_every = 0, sample = 0, top_k = 40;
  double lr = 1e-3, min_lr = 1e-4, weight_decay = 0.1, grad_clip = 1.0, val_fraction = 0.1,
         temperature = 0.8, momentum = 0.9;
  uint64_t seed = 1337;
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
  // tensor parallelism and balancing
  std::string tp_weights, straggler_trace, balance = "none", comm = "auto", priority = "taylor",
              impute = "zero";
  std::vector<std::string> tp_assign, stragglers, contend;
  int64_t horizon = 50, monitor_window = 3;
  double min_gain = 0.1;
  std::string lambda = "100";  // a number or inf; 100: best at equal wall time in bench/tradeoff
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

}  // namespace flextp
