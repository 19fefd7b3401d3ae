#pragma once
// Index arithmetic shared by CUDA kernels and their CPU tests (host and device functions).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/error.h"
#include "core/random.h"  // FLEXTP_HD
#include "core/shape.h"

namespace flextp::cuda {

// The part that element i of a packed buffer belongs to: the last k with start[k] <= i, for
// parts starting at increasing offsets start[0] = 0 < start[1] < ... (binary search).
FLEXTP_HD int part_of(const uint64_t* start, int parts, uint64_t i) {
  int lo = 0, hi = parts - 1;
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (start[mid] <= i)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

// How column sums split rows into chunks (core/cuda/column_sums.cuh): about 64 rows each, at
// most 512 chunks; every row in exactly one chunk, none empty.
struct RowChunks {
  size_t chunks, per;
};
inline RowChunks row_chunks(size_t rows) {
  size_t chunks = rows / 64;
  if (chunks < 1) chunks = 1;
  if (chunks > 512) chunks = 512;
  size_t per = (rows + chunks - 1) / chunks;
  if (per == 0) per = 1;
  chunks = (rows + per - 1) / per;
  if (chunks == 0) chunks = 1;
  return {chunks, per};
}

constexpr int kMaxDims = 8;

// General broadcasting of a binary op: the output's dimensions and each operand's strides along
// them (0 where it is broadcast). Passed to kernels by value.
struct Broadcast {
  int nd;
  int64_t dims[kMaxDims], sa[kMaxDims], sb[kMaxDims];
  // The elements of a and b that output element i combines.
  FLEXTP_HD void offsets(int64_t i, int64_t& ia, int64_t& ib) const {
    ia = ib = 0;
    for (int d = nd - 1; d >= 0; --d) {
      int64_t idx = i % dims[d];
      i /= dims[d];
      ia += idx * sa[d];
      ib += idx * sb[d];
    }
  }
};

inline Broadcast make_broadcast(const Shape& a, const Shape& b, const Shape& out) {
  FLEXTP_CHECK(out.size() <= static_cast<size_t>(kMaxDims), "cuda binary op: broadcasting over more than ",
               kMaxDims, " dimensions (", shape_str(out), ")");
  Broadcast bc{static_cast<int>(out.size()), {}, {}, {}};
  std::vector<int64_t> sa = broadcast_strides(a, out), sb = broadcast_strides(b, out);
  for (size_t d = 0; d < out.size(); ++d) bc.dims[d] = out[d], bc.sa[d] = sa[d], bc.sb[d] = sb[d];
  return bc;
}

// The reverse of broadcasting: output element o sums the input elements broadcast from it. kept:
// the input's dimensions the output has (with the input's strides); reduced: those summed over.
struct Reduction {
  int kept_n, reduced_n;
  int64_t kept_dims[kMaxDims], kept_strides[kMaxDims], reduced_dims[kMaxDims], reduced_strides[kMaxDims];
  int64_t reduced_count;  // input elements per output element
  FLEXTP_HD int64_t base(int64_t o) const {
    int64_t at = 0;
    for (int d = kept_n - 1; d >= 0; --d) {
      at += (o % kept_dims[d]) * kept_strides[d];
      o /= kept_dims[d];
    }
    return at;
  }
  FLEXTP_HD int64_t offset(int64_t k) const {  // of the k-th summed element from base
    int64_t at = 0;
    for (int d = reduced_n - 1; d >= 0; --d) {
      at += (k % reduced_dims[d]) * reduced_strides[d];
      k /= reduced_dims[d];
    }
    return at;
  }
};

inline Reduction make_reduction(const Shape& in, const Shape& out) {
  FLEXTP_CHECK(in.size() <= static_cast<size_t>(kMaxDims), "cuda sum_to_shape: more than ", kMaxDims,
               " dimensions (", shape_str(in), ")");
  std::vector<int64_t> so = broadcast_strides(out, in), st(in.size(), 1);
  for (int d = static_cast<int>(in.size()) - 2; d >= 0; --d) st[d] = st[d + 1] * in[d + 1];
  Reduction r{};
  r.reduced_count = 1;
  for (size_t d = 0; d < in.size(); ++d) {
    if (so[d] == 0 && in[d] > 1) {
      r.reduced_dims[r.reduced_n] = in[d];
      r.reduced_strides[r.reduced_n++] = st[d];
      r.reduced_count *= in[d];
    } else {
      r.kept_dims[r.kept_n] = in[d];
      r.kept_strides[r.kept_n++] = st[d];
    }
  }
  return r;
}

}  // namespace flextp::cuda
