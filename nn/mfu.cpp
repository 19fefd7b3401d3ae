#include "nn/mfu.h"

#include "nn/gpt.h"
#include "parallel/tp/unit_rows.h"

namespace flextp {

int64_t model_parameters(GPT& model) {
  int64_t n = 0;
  for (Parameter* p : model.parameters()) n += numel(logical_shape(*p));
  return n;
}

double training_flops_per_token(GPT& model, int64_t seq_len) {
  const GPTConfig& c = model.config();
  return training_flops_per_token(static_cast<double>(model_parameters(model)), c.n_layer, seq_len, c.n_embd);
}

MfuBasis mfu_basis(GPT& model, int64_t seq_len, Device device, MatmulPrecision precision, int ranks) {
  return {training_flops_per_token(model, seq_len), job_peak(device, precision, ranks)};
}

}  // namespace flextp
