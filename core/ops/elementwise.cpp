#include "core/ops/elementwise.h"

#include "core/autograd.h"
#include "core/dispatch.h"

namespace flextp {

Tensor sum_to_shape(const Tensor& g, const Shape& shape) {
  if (g.shape() == shape) return g;
  FLEXTP_CHECK(is_suffix(shape, g.shape()), "sum_to_shape: ", g.str(), " does not repeat ", shape_str(shape));
  Tensor out = Tensor::empty(shape, g.dtype(), g.device());
  FLEXTP_DISPATCH(g.device(), sum_to, g, out);
  return out;
}

namespace {

// The larger shape, where the other one repeats along its leading dimensions (and has no more
// dimensions, so that the output keeps every dimension of both).
Shape broadcast_shape(const Shape& a, const Shape& b) {
  if (b.size() <= a.size() && is_suffix(b, a)) return a;
  FLEXTP_CHECK(a.size() <= b.size() && is_suffix(a, b), "shapes ", shape_str(a), " and ", shape_str(b),
               " cannot be broadcast together");
  return b;
}

Tensor binary_raw(BinaryOp op, const Tensor& a, const Tensor& b) {
  detail::check_same_device("binary op", a, b);
  detail::check_same_dtype("binary op", a, b);
  Tensor out = Tensor::empty(broadcast_shape(a.shape(), b.shape()), a.dtype(), a.device());
  FLEXTP_DISPATCH(a.device(), binary, op, a, b, out);
  return out;
}

Tensor binary(BinaryOp op, const char* name, const Tensor& a, const Tensor& b) {
  Tensor out = binary_raw(op, a, b);
  Tensor ad = a.detach(), bd = b.detach();
  record(name, out, {a, b}, [op, ad, bd](const Tensor& g, const std::vector<bool>& needs) {
    std::vector<Tensor> grads(2);
    if (op == BinaryOp::Mul) {
      if (needs[0]) grads[0] = sum_to_shape(binary_raw(BinaryOp::Mul, g, bd), ad.shape());
      if (needs[1]) grads[1] = sum_to_shape(binary_raw(BinaryOp::Mul, g, ad), bd.shape());
    } else {
      if (needs[0]) grads[0] = sum_to_shape(g, ad.shape());
      if (needs[1]) grads[1] = sum_to_shape(g, bd.shape());
    }
    return grads;
  });
  return out;
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Add, "add", a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Mul, "mul", a, b); }

Tensor scale(const Tensor& x, double s) {
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  FLEXTP_DISPATCH(x.device(), scale, x, s, out);
  record("scale", out, {x}, [s](const Tensor& g, const std::vector<bool>&) {
    Tensor gx = Tensor::empty(g.shape(), g.dtype(), g.device());
    FLEXTP_DISPATCH(g.device(), scale, g, s, gx);
    return std::vector<Tensor>{gx};
  });
  return out;
}

void scale_inplace(Tensor& x, double s) { FLEXTP_DISPATCH(x.device(), scale, x, s, x); }

void add_inplace(Tensor& dst, const Tensor& src, double alpha) {
  FLEXTP_CHECK(dst.shape() == src.shape() && dst.dtype() == src.dtype(), "add_inplace: ",
               dst.str(), " += ", src.str(), ": shapes or dtypes differ");
  detail::check_same_device("add_inplace", dst, src);
  FLEXTP_DISPATCH(dst.device(), axpy, dst, src, alpha);
}

}  // namespace flextp
