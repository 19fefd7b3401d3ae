#pragma once
// Moving f64 test data between vocabulary order and a VocabLayout's local order, by hand (the
// vocabulary-parallel tests compare the parallel ops with the plain ones in vocabulary order).
#include <vector>

#include "core/tensor.h"
#include "parallel/tp/vocab_parallel.h"

namespace flextp::test {

// The columns of all [N, V] that the layout holds, in its local order: [N, Vl].
inline Tensor local_columns(const Tensor& all, const VocabLayout& layout) {
  const std::vector<int64_t>& ids = layout.global_ids();
  int64_t n = all.size(0), v = all.size(1), vl = layout.local_rows();
  std::vector<double> in = all.to_vector<double>(), out(n * vl);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < vl; ++j) out[i * vl + j] = in[i * v + ids[j]];
  return Tensor::from_vector(out, {n, vl});
}

// Local columns [N, Vl] put back in their vocabulary columns of an [N, rows] matrix (padded
// columns included), zeros elsewhere.
inline Tensor vocabulary_columns(const Tensor& local, const VocabLayout& layout) {
  const std::vector<int64_t>& ids = layout.global_ids();
  int64_t n = local.size(0), v = layout.rows(), vl = layout.local_rows();
  std::vector<double> in = local.to_vector<double>(), out(n * v, 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < vl; ++j) out[i * v + ids[j]] = in[i * vl + j];
  return Tensor::from_vector(out, {n, v});
}

// The rows of a [V, C] table that the layout holds, in its local order: [Vl, C].
inline Tensor local_table(const Tensor& table, const VocabLayout& layout) {
  const std::vector<int64_t>& ids = layout.global_ids();
  int64_t c = table.size(1), vl = layout.local_rows();
  std::vector<double> in = table.to_vector<double>(), out(vl * c);
  for (int64_t r = 0; r < vl; ++r)
    for (int64_t k = 0; k < c; ++k) out[r * c + k] = in[ids[r] * c + k];
  return Tensor::from_vector(out, {vl, c});
}

// Local rows [Vl, C] put back in their rows of a [rows, C] table, zeros elsewhere.
inline Tensor vocabulary_table(const Tensor& local, const VocabLayout& layout) {
  const std::vector<int64_t>& ids = layout.global_ids();
  int64_t c = local.size(1), vl = layout.local_rows();
  std::vector<double> in = local.to_vector<double>(), out(layout.rows() * c, 0.0);
  for (int64_t r = 0; r < vl; ++r)
    for (int64_t k = 0; k < c; ++k) out[ids[r] * c + k] = in[r * c + k];
  return Tensor::from_vector(out, {layout.rows(), c});
}

// The cross-entropy of all [N, V] (vocabulary order) on one process through the product's op: the
// whole vocabulary as one unit, no communicator. The reference the sharded cases are held to.
inline Tensor one_process_cross_entropy(const Tensor& all, const Tensor& targets, int32_t ignore_index = -100) {
  return vocab_parallel_cross_entropy(all, targets, VocabLayout({0}, all.size(1), all.size(1)), nullptr, ignore_index);
}

// [rows, Vl]: 1 where local column j holds row i. all [N, rows] times it gives
// local_columns(all), as a differentiable op.
inline Tensor selection(const VocabLayout& layout) {
  const std::vector<int64_t>& ids = layout.global_ids();
  int64_t vl = layout.local_rows();
  std::vector<double> s(layout.rows() * vl, 0.0);
  for (int64_t j = 0; j < vl; ++j) s[ids[j] * vl + j] = 1.0;
  return Tensor::from_vector(s, {layout.rows(), vl});
}

// [N, padded_rows] whose real columns are `all`'s ([N, V]) and whose padded ones are `loud` + j,
// far above them: counted in a softmax they would take almost all of it.
inline Tensor with_loud_padding(const Tensor& all, int64_t padded_rows, double loud) {
  int64_t n = all.size(0), vocab = all.size(1);
  std::vector<double> in = all.to_vector<double>(), out(n * padded_rows);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < padded_rows; ++j) out[i * padded_rows + j] = j < vocab ? in[i * vocab + j] : loud + j;
  return Tensor::from_vector(out, {n, padded_rows});
}

// A leaf holding a copy of t's values.
inline Tensor leaf_of(const Tensor& t) {
  Tensor x = t.detach().clone();
  x.set_requires_grad(true);
  return x;
}

}  // namespace flextp::test
