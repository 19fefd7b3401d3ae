#pragma once
// The settings of `train`, in the groups its --help shows (docs/flags.md lists them). Where the
// library has a struct for a group (GPTConfig, CosineSchedule, BalanceOptions), the flags set
// that struct and take its defaults: one source for each. The harness group (faults, emulated
// stragglers, contention) exists to test and measure flextp, not to train a model.
#include <cstdint>
#include <string>
#include <vector>

#include "nn/config.h"
#include "optim/optimizer.h"
#include "optim/schedule.h"
#include "parallel/balance/balance_options.h"

namespace flextp {

struct DataOptions {
  std::string data, val_data;  // no --data: the built-in corpus; no --val-data: its last val_fraction
  double val_fraction = 0.1;
  std::string tokenizer = "byte", tokenizer_dir;
  int64_t batch = 16;     // windows per optimizer step, over all replicas
  int64_t seq_len = 128;  // tokens per window
};

struct OptimizationOptions {
  std::string optimizer = "adamw";  // or sgd
  // --lr, --min-lr and --warmup; `total` is the run's (make_schedule, train/resume.h).
  CosineSchedule schedule{CosineSchedule{}.max_lr, CosineSchedule{}.min_lr, 50, 0};
  int64_t steps = 600;  // counted from the first step of the run a checkpoint resumes
  bool reset_schedule = false;  // a resumed run stretches the schedule to --steps
  double weight_decay = 0.1, momentum = SGDOptions{}.momentum, grad_clip = 1.0;
  std::string no_decay = "bias,ln_,wpe";  // name parts of the parameters without weight decay
  int64_t max_bad_steps = 10;
};

struct ParallelOptions {
  std::string device = "cpu";        // cpu, cuda (one GPU per local rank) or cuda:N
  std::string comm_backend = "auto";  // auto: NCCL for GPU ranks under mpirun, MPI otherwise
  std::string attention = "auto";
  bool tf32 = false, bf16 = false;
  int64_t tp = 0;           // ranks per tensor-parallel group (0: all); the rest data parallel
  std::string placement = "host";  // rank order: host (a host's ranks consecutive) or launcher
  int64_t micro_batch = 0;  // 0: a replica's whole share at once
  double dp_bucket_mb = 25;
  std::string dp_shares = "speed";  // windows per replica: "speed" or "even"
  std::string tp_weights, comm = "auto";
  std::vector<std::string> tp_assign;
  double rank_timeout = 600;  // seconds a collective may wait before a rank gives up on its peers
};

inline constexpr int64_t kDefaultSnapshotEvery = 20;

struct CheckpointOptions {
  std::string save, load, init_from_hf, export_hf;
  std::string name;      // of the run directory runs/NAME/ that a run without --save saves into
  bool no_save = false;  // not even there
  int64_t save_every = 0, keep_last = 0;
  // Recovery after losing a host (train/snapshots.h): a directory of each host's own, the steps
  // between snapshots (docs/results.md, "Losing a host", measured the default), and whether to
  // start from the newest complete snapshot there.
  std::string snapshot_dir;
  int64_t snapshot_every = 0;  // 0: not given, kDefaultSnapshotEvery
  bool resume_snapshot = false;
};

struct OutputOptions {
  std::string metrics, prompt = "\n";
  int64_t log_every = 10, eval_every = 100, eval_batches = 10, sample = 0, sample_every = 0, top_k = 40;
  double temperature = 0.8;
  bool eval_only = false;
};

// The testing harness.
struct HarnessOptions {
  std::vector<int64_t> fault_nan_steps;  // poison the loss at these steps (1-based)
  std::string fault_kill;                // RANK:STEP kills that rank in the middle of the step
  std::string fault_hang;                // RANK:STEP stops that rank there (alive, silent)
  std::vector<std::string> stragglers, contend;
  std::string straggler_trace;
};

struct TrainOptions {
  // vocab_size and n_positions hold --vocab and --n-positions when given; model_config() puts the
  // tokenizer's and --seq-len in when not (train/model_config.h).
  GPTConfig model;
  DataOptions data;
  OptimizationOptions optimization;
  ParallelOptions parallel;
  BalanceOptions balancing;  // resize.seed: the run's seed, set when it is known
  CheckpointOptions checkpoint;
  OutputOptions output;
  HarnessOptions harness;
  uint64_t seed = GPTConfig{}.seed;  // initialisation, data order, dropout, sampling, resizing
  bool debug = false;                // errors name the source line they come from
  bool print_config = false;         // print the options given as KEY=VALUE, and exit
};

}  // namespace flextp
