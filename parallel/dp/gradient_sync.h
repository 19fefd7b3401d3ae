#pragma once
// The data-parallel gradient sum. Each replica (a tensor-parallel group, parallel/dp/grid.h)
// computes the gradient of its own windows of the step; the step's gradient is their sum (each
// replica's loss is already scaled by its share of the global batch, parallel/dp/micro_batches.h,
// so the sum is the gradient of the mean over the whole batch). The replicas hold the same
// partition (the balancer takes one decision for all of them, trainer.cpp), so tensor-parallel
// rank r of every replica holds the same units in the same rows: summing parameter by parameter
// over the data-parallel group of slot r (the ranks sharing tp_rank) sums every unit's gradient
// over the replicas exactly once, and replicated parameters likewise. The sum runs before
// clipping, so that the norm clipping measures (optim/clip.h: squares of unit parameters summed
// over the tensor-parallel group, replicated ones counted once) is the global one.
//
// Many small all-reduces cost their latency each: gradients are packed into flat buckets of about
// `bucket_bytes` (in parameter order, one dtype and device per bucket) and each bucket is summed
// in one call. A gradient that no replica computed (a parameter unused this step) stays absent,
// as on one process, so that the optimizer skips it alike; one computed by some replicas only is
// summed with zeros for the others.
#include <cstdint>
#include <functional>
#include <vector>

#include "core/parameter.h"
#include "parallel/comm/communicator.h"

namespace flextp {

struct GradientSyncStats {
  int64_t buckets = 0, bytes = 0;  // of the last sum: all-reduces and the bytes they carried
};

class GradientSync {
 public:
  // `dp`: this rank's data-parallel group. `timed` runs each collective (e.g. through the step
  // clock, so that waiting for a slower replica counts as waiting); by default it just runs it.
  explicit GradientSync(Communicator& dp, int64_t bucket_bytes = 25 << 20,
                        std::function<void(const std::function<void()>&)> timed = {});
  // Sums every parameter's gradient over the data-parallel group, in place.
  void sum(const std::vector<Parameter*>& params);
  const GradientSyncStats& stats() const { return stats_; }

 private:
  Communicator& dp_;
  int64_t bucket_bytes_;
  std::function<void(const std::function<void()>&)> timed_;
  GradientSyncStats stats_;
  void all_reduce(Tensor& t);
};

}  // namespace flextp
