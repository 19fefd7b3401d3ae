#include "core/tensor.h"

#include <cstring>

#include "core/allocator.h"
#include "core/autograd.h"
#include "core/cuda/cuda_runtime_api.h"
#include "core/parallel_for.h"
#include "core/random.h"

namespace flextp {

Device Device::parse(const std::string& s) {
  if (s == "cpu") return cpu();
  if (s == "cuda") return cuda(0);
  if (s.rfind("cuda:", 0) == 0) {
    try {
      size_t used = 0;
      int i = std::stoi(s.substr(5), &used);
      if (used == s.size() - 5 && i >= 0) return cuda(i);
    } catch (const std::exception&) {
    }
  }
  FLEXTP_FAIL("unknown device '", s, "' (expected cpu, cuda or cuda:N)");
}

Storage::Storage(Device d, size_t n) : device(d), bytes(n), ptr(device_alloc(d, n)) {}
Storage::~Storage() { device_free(device, ptr, bytes); }

namespace {

std::shared_ptr<TensorImpl> new_impl(const Shape& shape, DType dtype, Device device) {
  for (int64_t d : shape) FLEXTP_CHECK(d >= 0, "negative dimension in shape ", shape_str(shape));
  std::optional<int64_t> count = checked_numel(shape);
  std::optional<int64_t> bytes = count ? checked_mul(*count, static_cast<int64_t>(dtype_size(dtype))) : std::nullopt;
  FLEXTP_CHECK(bytes, "a tensor of shape ", shape_str(shape), " and dtype ", dtype_name(dtype),
               " has more bytes than 64 bits can count");
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(device, static_cast<size_t>(*bytes));
  impl->shape = shape;
  impl->dtype = dtype;
  return impl;
}

template <typename T>
void fill_host(T* p, int64_t n, T v) {
  parallel_for(n, 1 << 16, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) p[i] = v;
  });
}

template <typename T, typename Gen>
void fill_host_random(T* p, int64_t n, Gen gen) {
  parallel_for(n, 1 << 14, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) p[i] = static_cast<T>(gen(i));
  });
}

}  // namespace

// Generated on the host and copied (only initialisation and tests draw whole tensors), so a GPU
// tensor holds the CPU's numbers.
Tensor Tensor::randn(const Shape& shape, uint64_t seed, uint64_t stream, double mean, double std,
                     DType dtype, Device device, uint64_t first) {
  if (!device.is_cpu()) return randn(shape, seed, stream, mean, std, dtype, Device::cpu(), first).to(device);
  Tensor t = Tensor::empty(shape, dtype, device);
  int64_t n = t.numel();
  auto gen = [&](int64_t i) { return mean + std * rng::normal(first + i, stream, seed); };
  if (dtype == DType::F32) {
    fill_host_random(t.data<float>(), n, gen);
  } else if (dtype == DType::F64) {
    fill_host_random(t.data<double>(), n, gen);
  } else {
    FLEXTP_FAIL("random tensors must be f32 or f64, not ", dtype_name(dtype));
  }
  return t;
}

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  return Tensor(new_impl(shape, dtype, device));
}

Tensor Tensor::zeros(const Shape& shape, DType dtype, Device device) {
  return full(shape, 0.0, dtype, device);
}

Tensor Tensor::ones(const Shape& shape, DType dtype, Device device) {
  return full(shape, 1.0, dtype, device);
}

Tensor Tensor::full(const Shape& shape, double value, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  t.fill_(value);
  return t;
}

template <typename T>
Tensor Tensor::from_vector(const std::vector<T>& values, const Shape& shape, Device device) {
  FLEXTP_CHECK(static_cast<int64_t>(values.size()) == flextp::numel(shape), "from_vector: ",
               values.size(), " values do not fill shape ", shape_str(shape));
  Tensor host = empty(shape, dtype_of<T>::value, Device::cpu());
  if (!values.empty()) std::memcpy(host.raw(), values.data(), values.size() * sizeof(T));
  return host.to(device);
}
template Tensor Tensor::from_vector(const std::vector<float>&, const Shape&, Device);
template Tensor Tensor::from_vector(const std::vector<double>&, const Shape&, Device);
template Tensor Tensor::from_vector(const std::vector<int32_t>&, const Shape&, Device);

int64_t Tensor::size(int dim) const {
  int n = ndim();
  int d = dim < 0 ? dim + n : dim;
  FLEXTP_CHECK(d >= 0 && d < n, "dimension ", dim, " out of range for shape ", shape_str(shape()));
  return shape()[d];
}

std::string Tensor::str() const {
  if (!defined()) return "undefined tensor";
  return std::string(dtype_name(dtype())) + shape_str(shape()) + " on " + device().str();
}

template <typename T>
std::vector<T> Tensor::to_vector() const {
  FLEXTP_CHECK(dtype() == dtype_of<T>::value, "to_vector: tensor ", str(), " read as ",
               dtype_name(dtype_of<T>::value));
  std::vector<T> out(numel());
  if (out.empty()) return out;
  if (is_cuda())
    cuda::memcpy(out.data(), false, raw(), true, nbytes());
  else
    std::memcpy(out.data(), raw(), nbytes());
  return out;
}
template std::vector<float> Tensor::to_vector() const;
template std::vector<double> Tensor::to_vector() const;
template std::vector<int32_t> Tensor::to_vector() const;

double Tensor::item() const {
  FLEXTP_CHECK(numel() == 1, "item() needs a one-element tensor, got ", str());
  switch (dtype()) {
    case DType::F32: return to_vector<float>()[0];
    case DType::F64: return to_vector<double>()[0];
    case DType::I32: return to_vector<int32_t>()[0];
    default: FLEXTP_FAIL("item() of a ", dtype_name(dtype()), " tensor");
  }
}

Tensor Tensor::to(Device d) const {
  if (d == device()) return *this;
  Tensor out = empty(shape(), dtype(), d);
  out.copy_from(*this);
  return out;
}

Tensor Tensor::to(DType t) const {
  if (t == dtype()) return clone();
  FLEXTP_CHECK(device().is_cpu(), "dtype conversion runs on the CPU; tensor is ", str());
  Tensor out = empty(shape(), t, device());
  int64_t n = numel();
  if (dtype() == DType::F32 && t == DType::F64) {
    const float* s = data<float>();
    double* o = out.data<double>();
    for (int64_t i = 0; i < n; ++i) o[i] = s[i];
  } else if (dtype() == DType::F64 && t == DType::F32) {
    const double* s = data<double>();
    float* o = out.data<float>();
    for (int64_t i = 0; i < n; ++i) o[i] = static_cast<float>(s[i]);
  } else {
    FLEXTP_FAIL("no conversion from ", dtype_name(dtype()), " to ", dtype_name(t));
  }
  return out;
}

Tensor Tensor::clone() const {
  Tensor out = empty(shape(), dtype(), device());
  out.copy_from(*this);
  return out;
}

Tensor Tensor::detach() const {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = impl_->storage;
  impl->offset = impl_->offset;
  impl->shape = impl_->shape;
  impl->dtype = impl_->dtype;
  return Tensor(impl);
}

void Tensor::copy_from(const Tensor& src) {
  FLEXTP_CHECK(shape() == src.shape() && dtype() == src.dtype(), "copy_from: destination ",
               str(), " and source ", src.str(), " differ in shape or dtype");
  if (nbytes() == 0) return;
  if (is_cuda() || src.is_cuda())
    cuda::memcpy(raw(), is_cuda(), src.raw(), src.is_cuda(), nbytes());
  else
    std::memcpy(raw(), src.raw(), nbytes());
}

void Tensor::fill_(double v) {
  int64_t n = numel();
  if (is_cuda()) {
    cuda::fill(raw(), n, dtype(), v);
    return;
  }
  switch (dtype()) {
    case DType::F32: fill_host(data<float>(), n, static_cast<float>(v)); break;
    case DType::F64: fill_host(data<double>(), n, v); break;
    case DType::I32: fill_host(data<int32_t>(), n, static_cast<int32_t>(v)); break;
    default: FLEXTP_FAIL("fill_ on a ", dtype_name(dtype()), " tensor");
  }
}

Tensor& Tensor::set_requires_grad(bool r) {
  FLEXTP_CHECK(is_leaf(), "requires_grad can only be set on a leaf tensor, not on the result of ",
               impl().grad_fn->name);
  FLEXTP_CHECK(!r || dtype() == DType::F32 || dtype() == DType::F64,
               "only floating-point tensors can require gradients, not ", str());
  impl().requires_grad = r;
  return *this;
}

void Tensor::set_grad(const Tensor& g) {
  FLEXTP_CHECK(!g.defined() || (g.shape() == shape() && g.dtype() == dtype()),
               "set_grad: gradient ", g.str(), " does not match tensor ", str());
  impl().grad = g.impl_ptr();
}

void Tensor::zero_grad() { impl().grad.reset(); }

void Tensor::backward(const Tensor& grad) const { run_backward(*this, grad); }

Tensor view_as(const Tensor& t, const Shape& shape) {
  FLEXTP_CHECK(numel(shape) == t.numel(), "cannot view ", t.str(), " as ", shape_str(shape));
  Tensor v = t.detach();
  v.impl().shape = shape;
  return v;
}

}  // namespace flextp
