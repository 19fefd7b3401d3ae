#pragma once
// Embedding lookup: ids (i32) [...] into table [V, C] -> [..., C]. The backward scatter-adds the
// output gradient into the rows that were looked up. The id -1 stands for a row held elsewhere
// (vocabulary-parallel embedding): its output row is 0 and it gets no gradient. Any other id
// outside [0, V) is an error.
#include "core/tensor.h"

namespace flextp {

Tensor embedding(const Tensor& ids, const Tensor& table);

namespace cpu {
void embedding_forward(const Tensor& ids, const Tensor& table, Tensor& out);
// Writes dtable (zeroes it, then adds every looked-up row's gradient).
void embedding_backward(const Tensor& ids, const Tensor& dout, Tensor& dtable);
}  // namespace cpu
namespace cuda {
void embedding_forward(const Tensor& ids, const Tensor& table, Tensor& out);
void embedding_backward(const Tensor& ids, const Tensor& dout, Tensor& dtable);
}  // namespace cuda

}  // namespace flextp
