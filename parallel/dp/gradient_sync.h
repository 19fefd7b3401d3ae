#pragma once
// The data-parallel gradient sum. Each replica (a tensor-parallel group, parallel/dp/grid.h)
// computes the gradient of its own windows of the step; the step's gradient is their sum (each
// replica's loss is already scaled by its share of the global batch, parallel/dp/micro_batches.h,
// so the sum is the gradient of the mean over the whole batch). It runs before clipping, so that
// the norm clipping measures (optim/clip.h) is the global one on every replica.
//
// Each replica balances its own group, so the replicas' partitions may differ (a migration in
// one replica, parallel/dp/replica_partitions.h). Every unit's gradient is still summed over the
// replicas exactly once:
//   - replicated parameters, and the units on which the replicas agree (the same slot owns them
//     in every replica), by an all-reduce over the data-parallel group of the slot: each rank
//     packs its agreeing units' rows in unit-id order (not its local order, which depends on its
//     migration and resizing history), in flat buckets of about `bucket_bytes` (in parameter
//     order, one dtype and device per bucket). The replicated parameters fill buckets of their
//     own, laid out alike on every slot, so that a reduction whose order depends on an element's
//     offset (NCCL's ring) still gives every tensor rank the same bits of them;
//   - the units on which they differ, by an exchange between their holders over the world's
//     ranks: the holder in the unit's root replica receives the others' rows, adds the parts in
//     replica order (so every replica gets the same bits) and sends the sum back. Per unit that
//     is 2 (D - 1) transfers of its rows, what a ring all-reduce sends; the roots rotate.
//
// The sum runs after the backward. Overlapping the buckets' all-reduces with it, as DDP does,
// was measured not to pay here and removed (docs/results.md, "The data-parallel gradient sum
// overlapping the backward (removed)").
//
// A gradient that no rank computed (a parameter unused this step) stays absent, as on one
// process, so that the optimizer skips it alike; one computed by some ranks only is summed with
// zeros for the others.
//
// Resizing stays per rank: a unit that one replica skips and another computes gets the sum of
// what was computed (zero from the skipping replica), and every replica applies the same update
// to it: on a rank that skipped it, its rows join Parameter::extra_rows, which the optimizer
// updates besides the active ones. A unit that every replica skips stays frozen everywhere. So
// every unit's weights stay the same in every replica; check_replica_weights
// (parallel/dp/replica_agreement.h) verifies it whenever a partition changes and every
// `check_every` sums.
#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "core/parameter.h"
#include "parallel/comm/communicator.h"
#include "parallel/dp/grid.h"
#include "parallel/dp/replica_partitions.h"

namespace flextp {

struct GradientSyncStats {
  int64_t buckets = 0, bytes = 0;  // of the last sum: all-reduces and the gradient bytes they carried
  int64_t units_exchanged = 0;     // units on which the replicas' partitions differ, summed by exchange
  // Bytes this rank sent: for the all-reduces, what a ring all-reduce sends (2 (D - 1) / D of the
  // buffer; the library's own algorithm may differ), plus the exchange's messages as sent.
  int64_t bytes_sent = 0;
  // What a ring all-reduce of all this rank's gradients (as if the replicas agreed) would send.
  int64_t ring_bytes = 0;
  int64_t extra_units = 0;  // units this rank skipped but updates from other replicas' gradients
  bool partitions_changed = false;  // the owner lists travelled: the first sum, or a replica's changed
  double sum_ms = 0;  // sum()'s wall time: what the step waits for after the backward
};

class GradientSync {
 public:
  // `dp`: this rank's data-parallel group (its slot's ranks, one per replica); `world`: every
  // rank of the grid, in world-rank order (the exchange and the owner lists travel over it).
  // `initial`: this rank's replica's partition at the start (the first sum learns every
  // replica's, and checks that their weights agree). `timed` runs each collective (e.g. through
  // the step clock, so that waiting for a slower replica counts as waiting); by default it just
  // runs it. `check_every`: sums between checks that the replicas' weights agree (0: only when a
  // partition changes).
  static constexpr int64_t kCheckEvery = 100;
  GradientSync(Communicator& dp, Communicator& world, const Grid& grid, const Partition& initial,
               int64_t bucket_bytes = 25 << 20, std::function<void(const std::function<void()>&)> timed = {},
               int64_t check_every = kCheckEvery);
  // Sums every parameter's gradient over the replicas, in place. `mine`: this replica's partition
  // now (the others learn it here when it changed). Collective over the world.
  void sum(const std::vector<Parameter*>& params, const Partition& mine);
  // Replica 0's `value` on every replica (a broadcast over the data-parallel group). The gradient
  // norm is summed in an order that follows the partition, so replicas whose partitions differ
  // get it with other rounding: all clip by replica 0's, so that every replica applies the same
  // update bit for bit.
  double same_on_every_replica(double value);
  const GradientSyncStats& stats() const { return stats_; }

 private:
  Communicator& dp_;
  Communicator& world_;
  Grid grid_;
  ReplicaPartitions partitions_;
  int64_t bucket_bytes_, check_every_, sums_ = 0;
  std::function<void(const std::function<void()>&)> timed_;
  GradientSyncStats stats_;
  // A bucket: gradient rows of consecutive parameters (one dtype and device), flat.
  struct Piece {
    size_t param;
    std::vector<int64_t> units;  // the units packed, by id; empty: the whole (replicated) gradient
    int64_t elems;
  };
  struct Bucket {
    std::vector<Piece> pieces;
    int64_t bytes = 0;
    DType dtype = DType::F32;
    Device device = Device::cpu();
  };
  // The buckets of a sum, from `present` (a gradient exists on some rank) and partitions_.
  std::vector<Bucket> plan(const std::vector<Parameter*>& params, const std::vector<char>& present) const;
  // The gradient rows of a bucket's pieces, in its order: views of the gradients.
  std::vector<Tensor> rows(const Bucket& b, const std::vector<Parameter*>& params) const;
  void run(const std::function<void()>& collective);
  void all_reduce_agreeing(const std::vector<Parameter*>& params, const std::vector<char>& present);
  // Rows this rank skipped but another replica computed are updated here too, from the sum
  // (Parameter::extra_rows). `computed`: how many replicas computed each unit, from base[group] on.
  void mark_extra_rows(const std::vector<Parameter*>& params, const std::vector<char>& present,
                       const int32_t* computed, const std::map<std::string, int64_t>& base);
  void exchange_differing(const std::vector<Parameter*>& params, const std::vector<char>& present);
  // exchange_differing's steps: what this rank holds of the differing units, one send_recv of
  // packed rows per direction, and the roots' sums in replica order.
  struct Exchange;
  Exchange differing_units(const std::vector<Parameter*>& params, const std::vector<char>& present);
  std::map<int, Tensor> send_and_receive(const Exchange& x, const std::vector<std::vector<Tensor>>& out,
                                         const std::vector<int64_t>& in);
  std::vector<std::vector<Tensor>> sum_at_roots(Exchange& x, const std::map<int, Tensor>& parts);
};

}  // namespace flextp
