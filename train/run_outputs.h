#pragma once
// What a run keeps besides its log: checkpoints (--save, --save-every, --keep-last), samples
// (--sample, --sample-every) and the Hugging Face export (--export-hf). Rank 0 writes the files
// while the other ranks wait for it, for as long as the disk takes: the watchdog is off on every
// rank, and the ranks leave together so that none waits in the next step's collectives with its
// watchdog on. (A killed rank still ends the job through mpirun.)
#include <string>

#include "data/tokenizer.h"
#include "nn/gpt.h"
#include "optim/optimizer.h"
#include "parallel/comm/communicator.h"
#include "store/checkpoint.h"
#include "train/log.h"
#include "train/options.h"
#include "train/watchdog.h"

namespace flextp {

class RunOutputs {
 public:
  // `clock`: the tensor-parallel group the checkpoint is gathered over; `writer`: this rank is in
  // the replica that writes (rank 0 of it, the files); `state`: the run's identity and metadata.
  RunOutputs(const TrainOptions& o, GPT& model, Optimizer& opt, Communicator& clock, Communicator& world,
             Watchdog& watchdog, TrainLog& log, const Tokenizer& tok, TrainState state, bool writer);
  // A checkpoint of the model after `step` steps at `path`.
  void save(const std::string& path, int64_t step);
  // --save-every: PATH-stepNNNNNN, and --keep-last's pruning.
  void save_periodic(int64_t step);
  // Every rank takes part in the forward passes, rank 0 prints.
  void sample(int64_t tokens, const std::string& title);
  // --export-hf, with GPT-2's tokenizer files for a model on GPT-2's vocabulary.
  void export_hf();

 private:
  template <typename F>
  void unwatched(const F& work) {
    watchdog_.pause();
    work();
    world_.barrier();
    watchdog_.resume();
  }

  const TrainOptions& o_;
  GPT& model_;
  Optimizer& opt_;
  Communicator& clock_;
  Communicator& world_;
  Watchdog& watchdog_;
  TrainLog& log_;
  const Tokenizer& tok_;
  TrainState state_;
  bool writer_, lead_;
};

}  // namespace flextp
