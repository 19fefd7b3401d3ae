#pragma once
// Tensor: a cheap handle (shared pointer) to a contiguous row-major block of one dtype on one
// device, plus what autograd needs (requires_grad, the gradient of a leaf, the node that made it).
// Copying a Tensor copies the handle, never the data; clone() copies the data.
#include <cstdint>
#include <memory>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/shape.h"

namespace flextp {

struct Node;

// Owns one allocation; returns it to the caching allocator when the last tensor lets go.
struct Storage {
  Storage(Device d, size_t bytes);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  Device device;
  size_t bytes;
  void* ptr;
};

class Tensor;

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  size_t offset = 0;  // in bytes, for views (row slices)
  Shape shape;
  DType dtype = DType::F32;
  bool requires_grad = false;            // set on leaves by the user, on results by autograd
  std::shared_ptr<TensorImpl> grad;      // accumulated gradient of a leaf
  std::shared_ptr<Node> grad_fn;         // the node that produced this tensor, if any
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // ---- creation ----
  static Tensor empty(const Shape& shape, DType dtype = DType::F32, Device device = Device::cpu());
  static Tensor zeros(const Shape& shape, DType dtype = DType::F32, Device device = Device::cpu());
  static Tensor ones(const Shape& shape, DType dtype = DType::F32, Device device = Device::cpu());
  static Tensor full(const Shape& shape, double value, DType dtype = DType::F32,
                     Device device = Device::cpu());
  template <typename T>
  static Tensor from_vector(const std::vector<T>& values, const Shape& shape,
                            Device device = Device::cpu());
  // A seeded counter-based normal random tensor (core/random.h): element i of the result is a
  // function of (seed, stream, first_index + i) alone, on every device.
  static Tensor randn(const Shape& shape, uint64_t seed, uint64_t stream = 0, double mean = 0,
                      double std = 1, DType dtype = DType::F32, Device device = Device::cpu(),
                      uint64_t first_index = 0);

  // ---- description ----
  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const { return impl().shape; }
  int ndim() const { return static_cast<int>(impl().shape.size()); }
  int64_t size(int dim) const;  // negative dims count from the end
  int64_t numel() const { return flextp::numel(impl().shape); }
  size_t nbytes() const { return numel() * dtype_size(dtype()); }
  DType dtype() const { return impl().dtype; }
  Device device() const { return impl().storage->device; }
  bool is_cuda() const { return device().is_cuda(); }
  std::string str() const;  // "f32[2, 3] on cpu"

  // ---- data ----
  void* raw() const { return static_cast<char*>(impl().storage->ptr) + impl().offset; }
  template <typename T>
  T* data() const {
    FLEXTP_CHECK(dtype() == dtype_of<T>::value, "tensor ", str(), " accessed as ",
                 dtype_name(dtype_of<T>::value));
    return static_cast<T*>(raw());
  }
  template <typename T>
  std::vector<T> to_vector() const;  // copies to the host; dtype must match T
  double item() const;               // value of a one-element tensor, as double

  Tensor to(Device device) const;  // copy to a device (same tensor if already there)
  Tensor to(DType dtype) const;    // convert f32 <-> f64 (CPU), a copy
  Tensor clone() const;            // deep copy, no autograd history
  Tensor detach() const;           // shares the data, no autograd history
  void copy_from(const Tensor& src);  // same shape and dtype, any devices
  void fill_(double value);
  void zero_() { fill_(0); }
  bool same_storage(const Tensor& o) const { return impl().storage == o.impl().storage; }

  // ---- autograd ----
  bool requires_grad() const { return impl().requires_grad; }
  Tensor& set_requires_grad(bool r);
  Tensor grad() const { return Tensor(impl().grad); }
  void set_grad(const Tensor& g);
  void zero_grad();  // drops the accumulated gradient
  const std::shared_ptr<Node>& grad_fn() const { return impl().grad_fn; }
  bool is_leaf() const { return impl().grad_fn == nullptr; }
  // Backpropagates from this tensor. A non-scalar needs an explicit gradient of its shape.
  void backward(const Tensor& grad = Tensor()) const;

  TensorImpl& impl() const {
    FLEXTP_CHECK(impl_, "use of an undefined tensor");
    return *impl_;
  }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }

 private:
  std::shared_ptr<TensorImpl> impl_;
};

// A view of the same data with another shape (no copy); used by kernels, not recorded.
Tensor view_as(const Tensor& t, const Shape& shape);

}  // namespace flextp
