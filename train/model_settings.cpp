#include "train/model_settings.h"

#include <sstream>
#include <string>
#include <vector>

#include "core/numerics.h"

namespace flextp {

namespace {

// Weight decay applies to every parameter whose name contains none of the comma-separated parts.
void set_weight_decay(const std::vector<Parameter*>& params, const std::string& no_decay) {
  std::vector<std::string> parts;
  std::stringstream list(no_decay);
  for (std::string part; std::getline(list, part, ',');)
    if (!part.empty()) parts.push_back(part);
  for (Parameter* p : params) {
    p->weight_decay = true;
    for (const std::string& part : parts)
      if (p->name.find(part) != std::string::npos) p->weight_decay = false;
  }
}

}  // namespace

void apply_model_settings(GPT& model, const TrainOptions& o, Device device) {
  const ParallelOptions& p = o.parallel;
  model.to(device);
  model.set_numerics(numerics_of(matmul_precision_of(p.tf32, p.bf16), p.attention));
  set_weight_decay(model.parameters(), o.optimization.no_decay);
}

std::unique_ptr<Optimizer> make_optimizer(const OptimizationOptions& o) {
  if (o.optimizer == "sgd") return std::make_unique<SGD>(SGDOptions{o.momentum, o.weight_decay});
  AdamWOptions adamw;
  adamw.weight_decay = o.weight_decay;
  return std::make_unique<AdamW>(adamw);
}

}  // namespace flextp
