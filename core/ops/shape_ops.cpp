#include "core/ops/shape_ops.h"

#include <cstring>

#include "core/autograd.h"
#include "core/dispatch.h"

namespace flextp {

Tensor reshape(const Tensor& x, Shape shape) {
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      FLEXTP_CHECK(infer < 0, "reshape: more than one -1 in ", shape_str(shape));
      infer = static_cast<int64_t>(i);
    } else {
      known *= shape[i];
    }
  }
  if (infer >= 0 && known > 0 && x.numel() % known == 0) shape[infer] = x.numel() / known;
  FLEXTP_CHECK(numel(shape) == x.numel() && (infer < 0 || shape[infer] >= 0), "cannot reshape ",
               x.str(), " to ", shape_str(shape));
  Tensor out = view_as(x, shape);
  Shape in_shape = x.shape();
  record("reshape", out, {x}, [in_shape](const Tensor& g, const std::vector<bool>&) {
    return std::vector<Tensor>{view_as(g, in_shape)};
  });
  return out;
}

Tensor slice_rows(const Tensor& x, int64_t start, int64_t len) {
  FLEXTP_CHECK(x.ndim() >= 1, "slice_rows of a scalar");
  FLEXTP_CHECK(start >= 0 && len >= 0 && start + len <= x.size(0), "slice_rows: rows [", start,
               ", ", start + len, ") out of range for ", x.str());
  Shape shape = x.shape();
  shape[0] = len;
  Tensor out = x.detach();
  int64_t row = x.numel() / std::max<int64_t>(x.size(0), 1);
  out.impl().offset += start * row * dtype_size(x.dtype());
  out.impl().shape = shape;
  Shape in_shape = x.shape();
  record("slice_rows", out, {x}, [in_shape, start, len](const Tensor& g, const std::vector<bool>&) {
    Tensor gx = Tensor::zeros(in_shape, g.dtype(), g.device());
    Tensor rows = slice_rows(gx, start, len);
    rows.copy_from(g);
    return std::vector<Tensor>{gx};
  });
  return out;
}

Tensor concat_rows(const std::vector<Tensor>& parts) {
  FLEXTP_CHECK(!parts.empty(), "concat_rows of no tensors");
  const Tensor& first = parts[0];
  FLEXTP_CHECK(first.ndim() >= 1, "concat_rows of scalars");
  Shape shape = first.shape();
  shape[0] = 0;
  for (const Tensor& p : parts) {
    Shape a = p.shape(), b = first.shape();
    bool ok = p.ndim() == first.ndim() && p.dtype() == first.dtype() &&
              p.device() == first.device();
    if (ok) {
      a[0] = b[0] = 0;
      ok = a == b;
    }
    FLEXTP_CHECK(ok, "concat_rows: ", p.str(), " does not stack under ", first.str());
    shape[0] += p.size(0);
  }
  Tensor out = Tensor::empty(shape, first.dtype(), first.device());
  Tensor packed = out.detach();
  FLEXTP_DISPATCH(out.device(), pack, parts, packed);
  std::vector<int64_t> starts;
  int64_t at = 0;
  for (const Tensor& p : parts) {
    starts.push_back(at);
    at += p.size(0);
  }
  std::vector<int64_t> lens;
  for (const Tensor& p : parts) lens.push_back(p.size(0));
  record("concat_rows", out, parts, [starts, lens](const Tensor& g, const std::vector<bool>& needs) {
    std::vector<Tensor> grads(starts.size());
    for (size_t i = 0; i < starts.size(); ++i)
      if (needs[i]) grads[i] = slice_rows(g.detach(), starts[i], lens[i]).clone();
    return grads;
  });
  return out;
}

namespace cpu {
void pack(const std::vector<Tensor>& parts, Tensor& out) {
  char* dst = static_cast<char*>(out.raw());
  for (const Tensor& p : parts) {
    if (p.nbytes()) std::memcpy(dst, p.raw(), p.nbytes());
    dst += p.nbytes();
  }
}
}  // namespace cpu

}  // namespace flextp
