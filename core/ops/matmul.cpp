#include "core/ops/matmul.h"

#include "core/autograd.h"
#include "core/dispatch.h"
#include "core/ops/shape_ops.h"

namespace flextp {
namespace {

// Shape of op(a) op(b) for 2-D or equally batched 3-D operands; an error naming both otherwise.
Shape product_shape(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  bool ok = a.ndim() == b.ndim() && (a.ndim() == 2 || a.ndim() == 3);
  if (ok && a.ndim() == 3) ok = a.size(0) == b.size(0);
  int64_t m = ok ? a.size(ta ? -1 : -2) : 0, ka = ok ? a.size(ta ? -2 : -1) : 0;
  int64_t kb = ok ? b.size(tb ? -1 : -2) : 0, n = ok ? b.size(tb ? -2 : -1) : 0;
  FLEXTP_CHECK(ok && ka == kb, "matmul: shapes ", shape_str(a.shape()), (ta ? "^T" : ""), " and ",
               shape_str(b.shape()), (tb ? "^T" : ""), " do not multiply");
  if (a.ndim() == 3) return {a.size(0), m, n};
  return {m, n};
}

Tensor matmul_raw(const Tensor& a, const Tensor& b, bool ta, bool tb, MatmulPrecision precision) {
  detail::check_same_device("matmul", a, b);
  detail::check_same_dtype("matmul", a, b);
  Tensor c = Tensor::empty(product_shape(a, b, ta, tb), a.dtype(), a.device());
  FLEXTP_DISPATCH(a.device(), matmul, a, b, c, ta, tb, false, precision);
  return c;
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b, bool ta, bool tb, MatmulPrecision precision) {
  // a [..., M, K] by a shared b [K, N]: fold the leading dims into M, multiply, unfold.
  if (a.ndim() > 2 && b.ndim() == 2 && !ta) {
    Shape out_shape = a.shape();
    out_shape.back() = b.size(tb ? 0 : 1);
    int64_t rows = 1;
    for (int d = 0; d < a.ndim() - 1; ++d) rows *= a.size(d);
    Tensor flat = reshape(a, {rows, a.size(-1)});
    return reshape(matmul(flat, b, false, tb, precision), out_shape);
  }
  Tensor c = matmul_raw(a, b, ta, tb, precision);
  Tensor ad = a.detach(), bd = b.detach();
  record("matmul", c, {a, b}, [ad, bd, ta, tb, precision](const Tensor& g, const std::vector<bool>& needs) {
    // C = op(A) op(B): dA and dB written as products of g with the other operand.
    std::vector<Tensor> grads(2);
    if (needs[0]) grads[0] = ta ? matmul_raw(bd, g, tb, true, precision) : matmul_raw(g, bd, false, !tb, precision);
    if (needs[1]) grads[1] = tb ? matmul_raw(g, ad, true, ta, precision) : matmul_raw(ad, g, !ta, false, precision);
    return grads;
  });
  return c;
}

}  // namespace flextp
