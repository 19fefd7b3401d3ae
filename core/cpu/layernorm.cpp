#include "core/ops/layernorm.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/dispatch.h"
#include "core/parallel_for.h"

namespace flextp::cpu {

namespace {

// One row: its statistics, then the normalised row (mean and rstd returned for the backward).
template <typename T>
void normalize_row(const T* in, const T* pw, const T* pb, int64_t c, double eps, T* out, T& mean, T& rstd) {
  T m = 0;
  for (int64_t j = 0; j < c; ++j) m += in[j];
  m /= T(c);
  T var = 0;
  for (int64_t j = 0; j < c; ++j) var += (in[j] - m) * (in[j] - m);
  T rs = T(1) / std::sqrt(var / T(c) + T(eps));
  for (int64_t j = 0; j < c; ++j) out[j] = (in[j] - m) * rs * pw[j] + pb[j];
  mean = m;
  rstd = rs;
}

int64_t rows_grain(int64_t c) { return std::max<int64_t>(1, 2048 / c); }

}  // namespace

void layernorm_forward(const Tensor& x, const Tensor& w, const Tensor& b, double eps, Tensor& y,
                       Tensor& mean, Tensor& rstd) {
  detail::dispatch_float(x.dtype(), "layernorm", [&](auto tag) {
    using T = decltype(tag);
    int64_t c = x.size(-1), rows = x.numel() / c;
    const T *px = x.data<T>(), *pw = w.data<T>(), *pb = b.data<T>();
    T *py = y.data<T>(), *pm = mean.data<T>(), *pr = rstd.data<T>();
    parallel_for(rows, rows_grain(c), [&](int64_t lo, int64_t hi) {
      for (int64_t r = lo; r < hi; ++r) normalize_row(px + r * c, pw, pb, c, eps, py + r * c, pm[r], pr[r]);
    });
  });
}

void layernorm_backward(const Tensor& x, const Tensor& w, const Tensor& mean, const Tensor& rstd,
                        const Tensor& dy, Tensor& dx, Tensor& dw, Tensor& db) {
  detail::dispatch_float(x.dtype(), "layernorm backward", [&](auto tag) {
    using T = decltype(tag);
    int64_t c = x.size(-1), rows = x.numel() / c;
    const T *px = x.data<T>(), *pw = w.data<T>(), *pm = mean.data<T>(), *pr = rstd.data<T>();
    const T* pg = dy.data<T>();
    T* pdx = dx.data<T>();
    // Each chunk of rows sums its own dw, db; the partials are added at the end.
    int chunks = std::max(1, std::min<int>(num_threads(), static_cast<int>(rows)));
    std::vector<T> part(static_cast<size_t>(chunks) * 2 * c, T(0));
    parallel_for(chunks, 1, [&](int64_t clo, int64_t chi) {
      for (int64_t ch = clo; ch < chi; ++ch) {
        T* pdw = part.data() + ch * 2 * c;
        T* pdb = pdw + c;
        for (int64_t r = rows * ch / chunks; r < rows * (ch + 1) / chunks; ++r) {
          const T* in = px + r * c;
          const T* g = pg + r * c;
          T m = pm[r], rs = pr[r];
          T mean_dxhat = 0, mean_dxhat_xhat = 0;
          for (int64_t j = 0; j < c; ++j) {
            T xhat = (in[j] - m) * rs;
            T dxhat = g[j] * pw[j];
            mean_dxhat += dxhat;
            mean_dxhat_xhat += dxhat * xhat;
            pdw[j] += g[j] * xhat;
            pdb[j] += g[j];
          }
          mean_dxhat /= T(c);
          mean_dxhat_xhat /= T(c);
          T* out = pdx + r * c;
          for (int64_t j = 0; j < c; ++j) {
            T xhat = (in[j] - m) * rs;
            out[j] = rs * (g[j] * pw[j] - mean_dxhat - xhat * mean_dxhat_xhat);
          }
        }
      }
    });
    T *pdw = dw.data<T>(), *pdb = db.data<T>();
    for (int64_t j = 0; j < c; ++j) {
      T sw = 0, sb = 0;
      for (int ch = 0; ch < chunks; ++ch) {
        sw += part[ch * 2 * c + j];
        sb += part[ch * 2 * c + c + j];
      }
      pdw[j] = sw;
      pdb[j] = sb;
    }
  });
}

}  // namespace flextp::cpu
