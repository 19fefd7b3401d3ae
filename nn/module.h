#pragma once
// Module: a node in the model tree that owns named parameters and child modules. Parameter
// names are full logical names ("h.0.attn.c_attn.weight"), given by the parent as a prefix.
#include <memory>
#include <string>
#include <vector>

#include "core/numerics.h"
#include "core/parameter.h"

namespace flextp {

class Module {
 public:
  explicit Module(std::string prefix) : prefix_(std::move(prefix)) {}
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // All parameters of this module and its children, in registration order.
  std::vector<Parameter*> parameters();
  // Moves every parameter (value and optimizer state) to a device; they stay leaves.
  void to(Device device);
  const std::string& prefix() const { return prefix_; }
  // How this module and every module below it compute on a GPU (core/numerics.h): set once on the
  // model, read by the layers that call matmul or attention. Default: plain f32.
  void set_numerics(const Numerics& numerics);
  const Numerics& numerics() const { return numerics_; }

 protected:
  Parameter& add_parameter(const std::string& name, Tensor value, bool weight_decay);
  template <typename M>
  M& add_module(std::unique_ptr<M> child) {
    M& ref = *child;
    children_.push_back(std::move(child));
    return ref;
  }
  std::string child_prefix(const std::string& name) const {
    return prefix_.empty() ? name : prefix_ + "." + name;
  }

 private:
  std::string prefix_;
  std::vector<std::unique_ptr<Parameter>> params_;
  std::vector<std::unique_ptr<Module>> children_;
  Numerics numerics_;
};

}  // namespace flextp
