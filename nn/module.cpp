#include "nn/module.h"

namespace flextp {

std::vector<Parameter*> Module::parameters() {
  std::vector<Parameter*> out;
  for (auto& p : params_) out.push_back(p.get());
  for (auto& c : children_)
    for (Parameter* p : c->parameters()) out.push_back(p);
  return out;
}

void Module::to(Device device) {
  for (Parameter* p : parameters()) {
    if (p->value.device() == device) continue;
    bool grad = p->value.requires_grad();
    p->value = p->value.detach().to(device);
    p->value.set_requires_grad(grad);
    for (auto& [name, t] : p->state) t = t.to(device);
  }
}

void Module::set_numerics(const Numerics& numerics) {
  numerics_ = numerics;
  for (auto& c : children_) c->set_numerics(numerics);
}

Parameter& Module::add_parameter(const std::string& name, Tensor value, bool weight_decay) {
  auto p = std::make_unique<Parameter>();
  p->name = child_prefix(name);
  p->value = value;
  p->value.set_requires_grad(true);
  p->weight_decay = weight_decay;
  params_.push_back(std::move(p));
  return *params_.back();
}

}  // namespace flextp
