#include "core/ops/embedding.h"

#include <cstring>

#include "core/dispatch.h"
#include "core/parallel_for.h"

namespace flextp::cpu {

void embedding_forward(const Tensor& ids, const Tensor& table, Tensor& out) {
  int64_t c = table.size(1);
  const int32_t* pid = ids.data<int32_t>();
  size_t row_bytes = c * dtype_size(table.dtype());
  const char* src = static_cast<const char*>(table.raw());
  char* dst = static_cast<char*>(out.raw());
  parallel_for(ids.numel(), 256, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      if (pid[i] < 0)
        std::memset(dst + i * row_bytes, 0, row_bytes);
      else
        std::memcpy(dst + i * row_bytes, src + pid[i] * row_bytes, row_bytes);
    }
  });
}

void embedding_backward(const Tensor& ids, const Tensor& dout, Tensor& dtable) {
  detail::dispatch_float(dtable.dtype(), "embedding backward", [&](auto tag) {
    using T = decltype(tag);
    int64_t c = dtable.size(1);
    dtable.zero_();
    const int32_t* pid = ids.data<int32_t>();
    const T* pg = dout.data<T>();
    T* pt = dtable.data<T>();
    // Split columns, not ids, across threads: two ids may hit the same row.
    parallel_for(c, 64, [&](int64_t lo, int64_t hi) {
      for (int64_t i = 0; i < ids.numel(); ++i) {
        if (pid[i] < 0) continue;
        T* row = pt + static_cast<int64_t>(pid[i]) * c;
        const T* g = pg + i * c;
        for (int64_t j = lo; j < hi; ++j) row[j] += g[j];
      }
    });
  });
}

}  // namespace flextp::cpu
