#pragma once
// The lines a run starts with: the model, its size, the data, the device; the grid and the
// units of each rank; the entropy a context-free model would reach.
#include "core/dtype.h"
#include "nn/gpt.h"
#include "parallel/comm/rank_threads.h"
#include "parallel/tp/partition.h"
#include "train/corpus.h"
#include "train/log.h"
#include "train/options.h"
#include "train/process_groups.h"

namespace flextp {

// `threads`: rank 0's OpenMP threads and why; `group`: this rank's tensor-parallel group; `world_rank`: this rank
// in the world.
void print_run_header(TrainLog& log, const TrainOptions& o, GPT& model, const Corpus& corpus, Device device,
                      const RankThreads& threads,
                      const ProcessGroups& groups, const Communicator& group, int world_rank, const Partition& partition);

}  // namespace flextp
