#include "nn/unit_costs.h"

#include "core/dtype.h"

namespace flextp {
namespace {
// A memory-bound elementwise pass over one element, in FLOP-equivalents: measured on the CPU
// (a rank holding no units spends ~7% of a full step on the replicated LayerNorms and adds).
constexpr double kElementwise = 40.0;
}  // namespace

UnitCosts gpt_unit_costs(const GPTConfig& c, int64_t batch, int64_t seq_len, int slots) {
  const double n = static_cast<double>(batch * seq_len), t = static_cast<double>(seq_len);
  const double ch = static_cast<double>(c.n_embd), d = static_cast<double>(c.head_dim());
  const double m = static_cast<double>(c.mlp_unit), v = static_cast<double>(c.vocab_unit);
  const double bytes_per_value = static_cast<double>(dtype_size(c.dtype)) * (1 + slots);
  // Forward + backward: three times the forward's matrix products.
  double head = 3 * (2 * n * ch * 3 * d + 2 * 2 * batch * t * t * d + 2 * n * d * ch) + kElementwise * 3 * n * t;
  double mlp = 3 * (2 * n * ch * m * 2) + kElementwise * 3 * n * m;
  double vocab = 3 * (2 * n * ch * v) + kElementwise * 3 * n * v;
  UnitCosts costs;
  for (int64_t l = 0; l < c.n_layer; ++l) {
    std::string h = "h." + std::to_string(l);
    costs.work[h + ".head"] = head;
    costs.work[h + ".mlp"] = mlp;
    costs.bytes[h + ".head"] = (3 * d * ch + 3 * d + d * ch) * bytes_per_value;
    costs.bytes[h + ".mlp"] = (m * ch + m + m * ch) * bytes_per_value;
  }
  costs.work["vocab"] = vocab;
  costs.bytes["vocab"] = v * ch * bytes_per_value;
  // LayerNorms, residual adds, biases, position embedding: done by every rank.
  costs.replicated_work = kElementwise * 3 * n * ch * (2 * c.n_layer + 1) * 4;
  return costs;
}

}  // namespace flextp
