#pragma once
// Optimizers update parameters from their gradients and keep their state in the parameters' own
// slots (Parameter::state), so that state moves with a parameter's units between ranks.
#include <string>
#include <vector>

#include "core/parameter.h"

namespace flextp {

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // One update of every parameter that has a gradient, at learning rate lr.
  virtual void step(const std::vector<Parameter*>& params, double lr) = 0;
  virtual const char* name() const = 0;
  // Names of the per-parameter slots this optimizer keeps (created as zeros when missing).
  virtual std::vector<std::string> slot_names() const = 0;
  int64_t steps_taken() const { return steps_; }
  void set_steps_taken(int64_t s) { steps_ = s; }

 protected:
  int64_t steps_ = 0;
};

struct AdamWOptions {
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.0;
};

class AdamW : public Optimizer {
 public:
  explicit AdamW(AdamWOptions o) : o_(o) {}
  void step(const std::vector<Parameter*>& params, double lr) override;
  const char* name() const override { return "adamw"; }
  std::vector<std::string> slot_names() const override { return {"m", "v"}; }

 private:
  AdamWOptions o_;
};

struct SGDOptions {
  double momentum = 0.9, weight_decay = 0.0;
};

class SGD : public Optimizer {
 public:
  explicit SGD(SGDOptions o) : o_(o) {}
  void step(const std::vector<Parameter*>& params, double lr) override;
  const char* name() const override { return "sgd"; }
  std::vector<std::string> slot_names() const override { return {"momentum"}; }

 private:
  SGDOptions o_;
};

}  // namespace flextp
