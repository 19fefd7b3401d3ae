#pragma once
// Vocabulary-parallel embedding and cross-entropy (Megatron's): each rank holds some vocabulary
// blocks (units of `unit_rows` rows, in local order) of the tied token embedding, and no rank
// ever holds all logits. With one rank holding every block they are the plain ops.
#include <vector>

#include "core/tensor.h"
#include "parallel/comm/communicator.h"

namespace flextp {

// Where each vocabulary id's row is in this rank's table: row index, or -1 when held elsewhere.
class VocabLayout {
 public:
  VocabLayout(const std::vector<int64_t>& local_units, int64_t unit_rows, int64_t vocab);
  int64_t local_row(int64_t id) const;
  // ids i32 [...] -> their local rows, -1 where the row lives on another rank.
  Tensor local_ids(const Tensor& ids) const;
  int64_t vocab() const { return vocab_; }
  int64_t local_rows() const { return local_rows_; }
  // Global id of each local row, in local order.
  const std::vector<int64_t>& global_ids() const { return global_ids_; }

 private:
  std::vector<int64_t> unit_offset_;  // per unit id: first local row, or -1
  std::vector<int64_t> global_ids_;
  int64_t unit_rows_, vocab_, local_rows_ = 0;
};

// ids [...] -> [..., C]: each rank looks up the rows it holds (zeros elsewhere), then all-reduce.
// The ids may be on any device (they are mapped on the host); the result is on the table's.
Tensor vocab_parallel_embedding(const Tensor& ids, const Tensor& table, const VocabLayout& layout,
                                Communicator* comm);

// Mean cross-entropy over rows whose target is not ignore_index, from this rank's logit
// columns [N, Vl] (in the layout's local order) and the global targets [N] (on any device: they
// are read on the host). Every rank gets the
// same loss; the backward gives each rank the gradient of its own columns.
Tensor vocab_parallel_cross_entropy(const Tensor& logits, const Tensor& targets, const VocabLayout& layout,
                                    Communicator* comm, int32_t ignore_index = -100);

// All logits [N, V] in vocabulary order, assembled from every rank's columns (no gradient).
Tensor gather_vocab_logits(const Tensor& logits, const VocabLayout& layout, Communicator* comm);

}  // namespace flextp
