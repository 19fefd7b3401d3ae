#include "parallel/tp/vocab_parallel.h"

#include <algorithm>
#include <cmath>

#include "core/autograd.h"
#include "core/dispatch.h"
#include "core/ops/elementwise.h"
#include "core/ops/embedding.h"
#include "core/ops/shape_ops.h"
#include "core/ops/sharded_cross_entropy.h"
#include "parallel/tp/tp_ops.h"

namespace flextp {

VocabLayout::VocabLayout(const std::vector<int64_t>& units, int64_t unit_rows, int64_t vocab, int64_t rows)
    : unit_rows_(unit_rows), vocab_(vocab), rows_(rows ? rows : vocab) {
  FLEXTP_CHECK(unit_rows > 0 && vocab > 0 && rows_ >= vocab, "vocabulary layout: ", vocab, " ids in ", rows_,
               " rows of units of ", unit_rows);
  unit_offset_.assign((rows_ + unit_rows - 1) / unit_rows, -1);
  for (int64_t u : units) {
    FLEXTP_CHECK(u >= 0 && u < static_cast<int64_t>(unit_offset_.size()), "vocabulary unit ", u,
                 " out of range");
    unit_offset_[u] = local_rows_;
    int64_t first = u * unit_rows, n = std::min(unit_rows, rows_ - first);
    for (int64_t r = 0; r < n; ++r) global_ids_.push_back(first + r);
    // The unit's real rows, joined to the run before when they follow it.
    int64_t real = std::clamp<int64_t>(vocab - first, 0, n);
    if (real == 0) {
    } else if (!real_runs_.empty() && real_runs_.back() == local_rows_) {
      real_runs_.back() += static_cast<int32_t>(real);
    } else {
      real_runs_.push_back(static_cast<int32_t>(local_rows_));
      real_runs_.push_back(static_cast<int32_t>(local_rows_ + real));
    }
    local_rows_ += n;
  }
}

int64_t VocabLayout::local_row(int64_t id) const {
  int64_t off = unit_offset_[id / unit_rows_];
  return off < 0 ? -1 : off + id % unit_rows_;
}

Tensor VocabLayout::local_ids(const Tensor& ids) const {
  std::vector<int32_t> in = ids.to_vector<int32_t>(), out(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    FLEXTP_CHECK(in[i] >= 0 && in[i] < vocab_, "token id ", in[i], " at position ", i,
                 " is outside the vocabulary of ", vocab_);
    out[i] = static_cast<int32_t>(local_row(in[i]));
  }
  return Tensor::from_vector(out, ids.shape(), ids.device());
}

Tensor vocab_parallel_embedding(const Tensor& ids, const Tensor& table, const VocabLayout& layout,
                                Communicator* comm) {
  // The ids are read on the host; the local ids go to the table's device.
  return reduce_from_tensor_parallel(embedding(layout.local_ids(ids).to(table.device()), table), comm);
}

Tensor vocab_parallel_cross_entropy(const Tensor& logits, const Tensor& targets, const VocabLayout& layout,
                                    Communicator* comm, int32_t ignore_index) {
  FLEXTP_CHECK(logits.ndim() == 2 && logits.size(1) == layout.local_rows(), "vocab-parallel cross-entropy: logits ",
               logits.str(), " do not match the ", layout.local_rows(), " local vocabulary rows");
  int64_t n = logits.size(0);
  FLEXTP_CHECK(targets.dtype() == DType::I32 && targets.shape() == Shape{n}, "cross-entropy targets must be i32 [",
               n, "], got ", targets.str());
  std::vector<int32_t> tg = targets.to_vector<int32_t>(), local(n);  // an input: read where it is
  std::vector<double> counted(n);
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i) {
    bool ignored = tg[i] == ignore_index;
    FLEXTP_CHECK(ignored || (tg[i] >= 0 && tg[i] < layout.vocab()), "cross_entropy: target ", tg[i], " of row ",
                 i, " is outside the ", layout.vocab(), " classes");
    local[i] = ignored ? -1 : static_cast<int32_t>(layout.local_row(tg[i]));
    counted[i] = ignored ? 0.0 : 1.0;
    count += !ignored;
  }
  Device dev = logits.device();
  DType dt = logits.dtype();
  Tensor local_target = Tensor::from_vector(local, {n}, dev);
  Tensor counted_t = Tensor::from_vector(counted, {n}).to(dt).to(dev);
  const std::vector<int32_t>& rr = layout.real_runs();
  Tensor runs = Tensor::from_vector(rr, {static_cast<int64_t>(rr.size() / 2), 2}, dev);
  // [row_max; sum_exp; target_logit]: this rank's statistics travel together, once.
  Tensor stats = Tensor::empty({3, n}, dt, dev);
  Tensor row_max = view_as(slice_rows(stats.detach(), 0, 1), {n});
  Tensor sum_exp = view_as(slice_rows(stats.detach(), 1, 1), {n});
  Tensor target_logit = view_as(slice_rows(stats.detach(), 2, 1), {n});
  Tensor lse = Tensor::empty({n}, dt, dev), loss = Tensor::empty({}, dt, dev);
  // This rank's max, its sum of exp relative to that max and its target logits; with several
  // ranks, every rank's travel in one all-gather and each rank combines them in rank order.
  FLEXTP_DISPATCH(dev, sharded_ce_row_max, logits, runs, row_max);
  FLEXTP_DISPATCH(dev, sharded_ce_sums, logits, runs, row_max, local_target, sum_exp, target_logit);
  if (comm && comm->size() > 1) {
    Tensor all = Tensor::empty({3 * comm->size(), n}, dt, dev);
    comm->all_gather(stats, all);
    FLEXTP_DISPATCH(dev, sharded_ce_combine, all, row_max, sum_exp, target_logit);
  }
  FLEXTP_DISPATCH(dev, sharded_ce_loss, row_max, sum_exp, target_logit, counted_t, count, lse, loss);
  Tensor ld = logits.detach();
  record("vocab_parallel_cross_entropy", loss, {logits},
         [ld, runs, local_target, lse, counted_t, count](const Tensor& g, const std::vector<bool>&) {
           Tensor d = Tensor::empty(ld.shape(), ld.dtype(), ld.device());
           FLEXTP_DISPATCH(ld.device(), sharded_ce_backward, ld, runs, local_target, lse, counted_t, g, count, d);
           return std::vector<Tensor>{d};
         });
  return loss;
}

Tensor gather_vocab_logits(const Tensor& logits, const VocabLayout& layout, Communicator* comm) {
  NoGradGuard ng;
  int64_t n = logits.size(0), vl = logits.size(1);
  Tensor host = logits.to(Device::cpu()).to(DType::F64);
  int64_t v = layout.vocab();
  std::vector<double> in = host.to_vector<double>(), out(n * v, 0.0);
  const std::vector<int64_t>& ids = layout.global_ids();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < vl; ++j)
      if (ids[j] < v) out[i * v + ids[j]] = in[i * vl + j];
  Tensor all = Tensor::from_vector(out, {n, layout.vocab()});
  if (comm) comm->all_reduce(all);
  return all.to(logits.dtype()).to(logits.device());
}

}  // namespace flextp
