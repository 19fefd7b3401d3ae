#include "parallel/dp/gradient_sync.h"

#include <algorithm>
#include <map>
#include <set>

#include "core/autograd.h"
#include "core/error.h"
#include "core/ops/elementwise.h"
#include "core/ops/shape_ops.h"
#include "core/timer.h"
#include "parallel/dp/replica_agreement.h"
#include "parallel/tp/unit_rows.h"

namespace flextp {
namespace {

int64_t row_width(const Parameter& p) { return numel(logical_shape(p)) / p.logical_rows(); }

// Local index of each logical unit of p (-1: not held here).
std::vector<int64_t> local_index(const Parameter& p) {
  std::vector<int64_t> where(p.group().units, -1);
  for (size_t k = 0; k < p.units.size(); ++k) where[p.units[k]] = static_cast<int64_t>(k);
  return where;
}

Tensor flat(const Tensor& t) { return view_as(t, {t.numel()}); }

Tensor concat_flat(const std::vector<Tensor>& parts) {
  std::vector<Tensor> f;
  for (const Tensor& t : parts) f.push_back(flat(t));
  return f.size() == 1 ? f[0].clone() : concat_rows(f);
}

// What this rank sends in a ring all-reduce of `bytes` over `d` ranks.
int64_t ring_share(int64_t bytes, int d) { return 2 * (d - 1) * bytes / d; }

}  // namespace

GradientSync::GradientSync(Communicator& dp, Communicator& world, const Grid& grid, const Partition& initial,
                           int64_t bucket_bytes, std::function<void(const std::function<void()>&)> timed,
                           int64_t check_every)
    : dp_(dp), world_(world), grid_(grid), partitions_(grid, initial), bucket_bytes_(bucket_bytes),
      check_every_(check_every), timed_(std::move(timed)) {
  FLEXTP_CHECK(bucket_bytes > 0, "gradient buckets of ", bucket_bytes, " bytes: they must be positive");
  FLEXTP_CHECK(check_every >= 0, "checking the replicas' weights every ", check_every, " sums: use 0 or more");
  FLEXTP_CHECK(dp.size() == grid.dp && dp.rank() == grid.dp_rank, "a grid of ", grid.dp,
               " replicas needs a data-parallel group of as many ranks, in replica order");
  FLEXTP_CHECK(world.size() == grid.world() && world.rank() == grid.world_rank(), "a grid of ", grid.world(),
               " ranks needs the world's communicator in world-rank order");
}

void GradientSync::run(const std::function<void()>& collective) {
  if (timed_)
    timed_(collective);
  else
    collective();
}

double GradientSync::same_on_every_replica(double value) {
  if (grid_.dp == 1) return value;
  Tensor t = Tensor::from_vector<double>({value}, {1});
  run([&] { dp_.broadcast(t, 0); });
  return t.item();
}

void GradientSync::sum(const std::vector<Parameter*>& params, const Partition& mine) {
  stats_ = {};
  if (grid_.dp == 1) return;
  const double began = now_ms();
  NoGradGuard ng;
  // One small all-reduce over the world: whether a replica's partition changed, which gradients
  // exist anywhere, and how many replicas computed each unit (resizing skips some).
  std::map<std::string, int64_t> base;
  int64_t units = 0;
  for (const auto& [group, owners] : mine.groups()) base[group] = units, units += static_cast<int64_t>(owners.size());
  const int64_t n = static_cast<int64_t>(params.size());
  Tensor flags = Tensor::zeros({1 + n + units}, DType::I32);
  int32_t* f = flags.data<int32_t>();
  // The first sum learns every replica's partition whatever each started from (a resumed run's
  // replicas need not agree); later ones only when one changed.
  if (grid_.tp_rank == 0) f[0] = sums_ == 0 || partitions_.changed(mine) ? 1 : 0;
  std::set<std::string> seen;  // each group's units counted from its first parameter
  for (int64_t i = 0; i < n; ++i) {
    const Parameter& p = *params[i];
    f[1 + i] = p.grad().defined() ? 1 : 0;
    if (p.replicated() || !seen.insert(p.group().name).second) continue;
    for (int64_t k = 0; k < p.active_units(); ++k) ++f[1 + n + base.at(p.group().name) + p.units[k]];
  }
  run([&] { world_.all_reduce(flags, ReduceOp::Sum); });
  stats_.partitions_changed = f[0] > 0;
  if (stats_.partitions_changed) run([&] { partitions_.exchange(world_, mine); });
  if (stats_.partitions_changed || (check_every_ > 0 && sums_ % check_every_ == 0))
    run([&] { check_replica_weights(world_, grid_, params); });
  ++sums_;

  std::vector<char> present(n);
  for (int64_t i = 0; i < n; ++i) {
    Parameter& p = *params[i];
    present[i] = f[1 + i] > 0;
    if (present[i] && !p.grad().defined() && p.value.numel() > 0)
      p.value.set_grad(Tensor::zeros(p.value.shape(), p.value.dtype(), p.value.device()));
  }
  all_reduce_agreeing(params, present);
  exchange_differing(params, present);
  stats_.units_exchanged = partitions_.differing();

  mark_extra_rows(params, present, f + 1 + n, base);
  stats_.sum_ms = now_ms() - began;
}

void GradientSync::mark_extra_rows(const std::vector<Parameter*>& params, const std::vector<char>& present,
                                   const int32_t* computed, const std::map<std::string, int64_t>& base) {
  std::set<std::string> seen;  // each group counted once, at its first parameter
  for (size_t i = 0; i < params.size(); ++i) {
    Parameter& p = *params[i];
    if (p.replicated()) continue;
    p.extra_rows.clear();
    if (!present[i] || !p.resized()) continue;
    bool first = seen.insert(p.group().name).second;
    std::vector<int64_t> offsets = local_unit_offsets(p);
    for (size_t k = static_cast<size_t>(p.active_units()); k < p.units.size(); ++k) {
      if (computed[base.at(p.group().name) + p.units[k]] == 0) continue;  // every replica skipped it: frozen
      stats_.extra_units += first;
      int64_t rows = p.rows_of_unit(p.units[k]);
      if (!p.extra_rows.empty() && p.extra_rows.back().first + p.extra_rows.back().second == offsets[k])
        p.extra_rows.back().second += rows;
      else
        p.extra_rows.push_back({offsets[k], rows});
    }
  }
}

std::vector<GradientSync::Bucket> GradientSync::plan(const std::vector<Parameter*>& params,
                                                    const std::vector<char>& present) const {
  // The rows each rank of the slot's data-parallel group sums: the same units, packed in the same
  // (unit-id) order on every replica. Only state every replica shares decides them (no local
  // layout), so that every rank all-reduces the same buckets.
  std::vector<Piece> pieces;
  for (size_t i = 0; i < params.size(); ++i) {
    const Parameter& p = *params[i];
    if (!present[i]) continue;
    if (p.replicated()) {
      if (p.value.numel() > 0) pieces.push_back({i, {}, p.value.numel()});
      continue;
    }
    Piece piece{i, {}, 0};
    const std::string& group = p.group().name;
    for (int64_t u = 0; u < p.group().units; ++u)
      if (partitions_.agree(group, u) && partitions_.holder(grid_.dp_rank, group, u) == world_.rank()) {
        piece.units.push_back(u);
        piece.elems += p.rows_of_unit(u) * row_width(p);
      }
    if (piece.elems > 0) pieces.push_back(piece);
  }
  // Buckets: consecutive pieces of one dtype and device, up to bucket_bytes_ (a larger piece alone).
  // The replicated parameters' pieces fill buckets of their own, first in the list (so all-reduced
  // last): their layout then follows from the parameters alone, the same on every slot. A
  // reduction whose order of summation depends on an element's offset (a ring's chunks, as in
  // NCCL) gives every tensor rank of a replica the same bits of a replicated gradient only if the
  // element sits at the same offset of the same bucket on every slot; else, with three or more
  // replicas, the replicated weights drift apart between a replica's tensor ranks.
  auto fill = [&](bool replicated) {
    std::vector<Bucket> buckets;
    for (const Piece& piece : pieces) {
      if (params[piece.param]->replicated() != replicated) continue;
      const Tensor& v = params[piece.param]->value;
      const int64_t bytes = piece.elems * static_cast<int64_t>(dtype_size(v.dtype()));
      if (buckets.empty() || buckets.back().dtype != v.dtype() || !(buckets.back().device == v.device()) ||
          buckets.back().bytes + bytes > bucket_bytes_) {
        buckets.emplace_back();
        buckets.back().dtype = v.dtype(), buckets.back().device = v.device();
      }
      Bucket& b = buckets.back();
      b.pieces.push_back(piece), b.bytes += bytes;
    }
    return buckets;
  };
  std::vector<Bucket> buckets = fill(true), units = fill(false);
  for (Bucket& b : units) buckets.push_back(std::move(b));
  return buckets;
}

std::vector<Tensor> GradientSync::rows(const Bucket& b, const std::vector<Parameter*>& params) const {
  std::vector<Tensor> out;
  for (const Piece& piece : b.pieces) {
    const Parameter& p = *params[piece.param];
    Tensor g = p.grad();
    FLEXTP_CHECK(g.defined(), "the data-parallel sum of ", p.name, ": no gradient to pack");  // sum() made zeros
    if (piece.units.empty()) {
      FLEXTP_CHECK(g.numel() == piece.elems, "the gradient of ", p.name, " changed size during the sum");
      out.push_back(g);
      continue;
    }
    std::vector<int64_t> where = local_index(p), offsets = local_unit_offsets(p);
    for (int64_t u : piece.units) {
      FLEXTP_CHECK(where[u] >= 0, "the data-parallel sum of ", p.name, ": unit ", u, " is not held here");
      out.push_back(slice_rows(g, offsets[where[u]], p.rows_of_unit(u)));
    }
  }
  return out;
}

void GradientSync::all_reduce_agreeing(const std::vector<Parameter*>& params, const std::vector<char>& present) {
  std::vector<Bucket> buckets = plan(params, present);
  const int d = grid_.dp;
  // In one order on every rank: the reverse of parameter order, as the backward leaves them.
  for (auto it = buckets.rbegin(); it != buckets.rend(); ++it) {
    const Bucket& b = *it;
    // Packed flat, summed, and the sum written back through the views it was packed from.
    std::vector<Tensor> views = rows(b, params);
    Tensor packed = concat_flat(views);
    run([&] { dp_.all_reduce(packed, ReduceOp::Sum); });
    int64_t at = 0;
    for (Tensor& v : views) {
      v.copy_from(view_as(slice_rows(packed, at, v.numel()), v.shape()));
      at += v.numel();
    }
    for (const Piece& piece : b.pieces)
      stats_.ring_bytes += ring_share(piece.elems * static_cast<int64_t>(dtype_size(b.dtype)), d);
    ++stats_.buckets, stats_.bytes += b.bytes, stats_.bytes_sent += ring_share(b.bytes, d);
  }
}

// The units on which the replicas differ and that this rank holds, in the one order every rank
// walks (parameters in order, units by id): a sender packs, and a root reads, in that order.
struct GradientSync::Exchange {
  struct Held {
    Tensor rows;  // this rank's gradient rows of the unit (a view)
    const std::string* group;
    int64_t unit;
    int root;  // the replica that sums it
  };
  std::vector<Held> held;
  std::vector<std::vector<Tensor>> to_root;  // per world rank: the parts this rank sends it to sum
  // Per world rank: the elements this rank receives from it, to sum (as a root's holder) and
  // summed back (as another holder).
  std::vector<int64_t> from, back_from;
  DType dtype = DType::F32;
  Device device = Device::cpu();
};

GradientSync::Exchange GradientSync::differing_units(const std::vector<Parameter*>& params,
                                                     const std::vector<char>& present) {
  const int world = world_.size(), me = world_.rank();
  Exchange x;
  x.to_root.resize(world);
  x.from.assign(world, 0);
  x.back_from.assign(world, 0);
  for (size_t i = 0; i < params.size(); ++i) {
    Parameter& p = *params[i];
    if (!present[i] || p.replicated()) continue;
    const std::string& group = p.group().name;
    std::vector<int64_t> where = local_index(p), offsets = local_unit_offsets(p);
    const int64_t width = row_width(p);
    for (int64_t u = 0; u < p.group().units; ++u) {
      if (partitions_.agree(group, u) || partitions_.holder(grid_.dp_rank, group, u) != me) continue;
      FLEXTP_CHECK(where[u] >= 0, "unit ", u, " of ", group, " is this rank's by its partition, but ", p.name,
                   " does not hold it");
      FLEXTP_CHECK(x.held.empty() || p.grad().dtype() == x.dtype, "the data-parallel exchange of ", p.name,
                   ": gradients of mixed dtypes");
      x.dtype = p.grad().dtype(), x.device = p.grad().device();
      Exchange::Held h{slice_rows(p.grad(), offsets[where[u]], p.rows_of_unit(u)), &group, u,
                       partitions_.root(group, u)};
      stats_.ring_bytes += ring_share(static_cast<int64_t>(h.rows.nbytes()), grid_.dp);
      const int64_t elems = p.rows_of_unit(u) * width;
      if (h.root != grid_.dp_rank) {
        x.to_root[partitions_.holder(h.root, group, u)].push_back(h.rows);
        x.back_from[partitions_.holder(h.root, group, u)] += elems;
      } else {
        for (int d = 0; d < grid_.dp; ++d)
          if (d != h.root) x.from[partitions_.holder(d, group, u)] += elems;
      }
      x.held.push_back(h);
    }
  }
  return x;
}

std::map<int, Tensor> GradientSync::send_and_receive(const Exchange& x, const std::vector<std::vector<Tensor>>& out,
                                                     const std::vector<int64_t>& in) {
  std::vector<Communicator::Transfer> sends, recvs;
  for (int w = 0; w < world_.size(); ++w) {
    if (!out[w].empty()) {
      sends.push_back({w, concat_flat(out[w])});
      stats_.bytes_sent += static_cast<int64_t>(sends.back().buffer.nbytes());
    }
    if (in[w] > 0) recvs.push_back({w, Tensor::empty({in[w]}, x.dtype, x.device)});
  }
  run([&] { world_.send_recv(sends, recvs); });
  std::map<int, Tensor> got;
  for (const auto& r : recvs) got[r.peer] = r.buffer;
  return got;
}

std::vector<std::vector<Tensor>> GradientSync::sum_at_roots(Exchange& x, const std::map<int, Tensor>& parts) {
  std::vector<int64_t> cursor(world_.size(), 0);
  std::vector<std::vector<Tensor>> sums(world_.size());
  for (Exchange::Held& h : x.held) {
    if (h.root != grid_.dp_rank) continue;
    Tensor acc;
    for (int d = 0; d < grid_.dp; ++d) {
      Tensor part = h.rows;
      if (d != grid_.dp_rank) {
        int w = partitions_.holder(d, *h.group, h.unit);
        part = view_as(slice_rows(parts.at(w), cursor[w], h.rows.numel()), h.rows.shape());
        cursor[w] += h.rows.numel();
      }
      acc = d == 0 ? part.clone() : add(acc, part);
    }
    h.rows.copy_from(acc);
    for (int d = 0; d < grid_.dp; ++d)
      if (d != grid_.dp_rank) sums[partitions_.holder(d, *h.group, h.unit)].push_back(h.rows);
  }
  return sums;
}

void GradientSync::exchange_differing(const std::vector<Parameter*>& params, const std::vector<char>& present) {
  if (partitions_.differing() == 0) return;
  Exchange x = differing_units(params, present);
  // Every holder sends its part to the root's holder, which adds the parts in replica order ...
  std::vector<std::vector<Tensor>> sums = sum_at_roots(x, send_and_receive(x, x.to_root, x.from));
  // ... and sends the sum back to the other holders.
  std::map<int, Tensor> summed = send_and_receive(x, sums, x.back_from);
  std::vector<int64_t> cursor(world_.size(), 0);
  for (Exchange::Held& h : x.held) {
    if (h.root == grid_.dp_rank) continue;
    int w = partitions_.holder(h.root, *h.group, h.unit);
    h.rows.copy_from(view_as(slice_rows(summed.at(w), cursor[w], h.rows.numel()), h.rows.shape()));
    cursor[w] += h.rows.numel();
  }
}

}  // namespace flextp
