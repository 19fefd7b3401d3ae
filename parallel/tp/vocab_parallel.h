#pragma once
// Vocabulary-parallel embedding and cross-entropy (Megatron's): each rank holds some vocabulary
// blocks (units of `unit_rows` rows, in local order) of the tied token embedding, and no rank
// ever holds all logits. With one rank holding every block they are the plain ops.
#include <vector>

#include "core/tensor.h"
#include "parallel/comm/communicator.h"

namespace flextp {

// Where each vocabulary id's row is in this rank's table: row index, or -1 when held elsewhere.
// The table may be padded: units of unit_rows rows cover `rows` >= vocab rows, and the rows from
// vocab on (the end of the last unit or units) are padding, which no id looks up and no softmax
// sees (GPTConfig::padded_vocab aligns the LM head's GEMMs this way).
class VocabLayout {
 public:
  VocabLayout(const std::vector<int64_t>& local_units, int64_t unit_rows, int64_t vocab, int64_t rows = 0);
  int64_t local_row(int64_t id) const;
  // ids i32 [...] -> their local rows, -1 where the row lives on another rank.
  Tensor local_ids(const Tensor& ids) const;
  int64_t vocab() const { return vocab_; }  // real ids 0 .. vocab-1
  int64_t rows() const { return rows_; }    // table rows, padding included
  int64_t local_rows() const { return local_rows_; }
  // Global row of each local row, in local order (padded rows included).
  const std::vector<int64_t>& global_ids() const { return global_ids_; }
  // The local rows that hold real ids, as [begin, end) runs in local order, flattened: the
  // columns of this rank's logits that the cross-entropy reads.
  const std::vector<int32_t>& real_runs() const { return real_runs_; }

 private:
  std::vector<int64_t> unit_offset_;  // per unit id: first local row, or -1
  std::vector<int64_t> global_ids_;
  std::vector<int32_t> real_runs_;
  int64_t unit_rows_, vocab_, rows_, local_rows_ = 0;
};

// ids [...] -> [..., C]: each rank looks up the rows it holds (zeros elsewhere), then all-reduce.
// The ids may be on any device (they are mapped on the host); the result is on the table's.
Tensor vocab_parallel_embedding(const Tensor& ids, const Tensor& table, const VocabLayout& layout,
                                Communicator* comm);

// Mean cross-entropy over rows whose target is not ignore_index, from this rank's logit
// columns [N, Vl] (in the layout's local order) and the global targets [N] (on any device: they
// are read on the host, as inputs). Every rank gets the same loss; the backward gives each rank
// the gradient of its own columns. Padded columns take no part and get zero gradient.
// The row maxima, sums and log-sum-exp stay on the logits' device; one collective per loss: each
// rank's row maxima, sums of exp relative to its own maxima and target logits travel together in
// one all-gather, and every rank combines them in rank order (sharded_ce_combine: no exp that
// can overflow), so every rank gets the same loss. (Two all-reduces, the max and then the sums
// relative to it, would wait twice for the slowest rank.)
Tensor vocab_parallel_cross_entropy(const Tensor& logits, const Tensor& targets, const VocabLayout& layout,
                                    Communicator* comm, int32_t ignore_index = -100);

// All logits [N, V] of the real ids in vocabulary order, assembled from every rank's columns
// (no gradient; the padded columns are dropped).
Tensor gather_vocab_logits(const Tensor& logits, const VocabLayout& layout, Communicator* comm);

}  // namespace flextp
