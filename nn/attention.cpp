#include "nn/attention.h"

#include <cmath>

#include "core/ops/attention.h"
#include "nn/unit_costs.h"

namespace flextp {
namespace {
LinearSpec qkv_spec(const GPTConfig& c, std::shared_ptr<const UnitGroup> g, const std::vector<int64_t>& heads) {
  return {c.n_embd, 3 * c.n_embd, Split::Column, std::move(g), 3 * c.head_dim(), heads, 0.02, HfLayout::Conv1DQkv};
}
LinearSpec proj_spec(const GPTConfig& c, std::shared_ptr<const UnitGroup> g, const std::vector<int64_t>& heads) {
  // GPT-2 scales residual projections by 1/sqrt(2 L): two per block add into the stream.
  return {c.n_embd, c.n_embd, Split::Row, std::move(g), c.head_dim(), heads, 0.02 / std::sqrt(2.0 * c.n_layer),
          HfLayout::AsIs};
}
}  // namespace

UnitGroup CausalSelfAttention::unit_group(const GPTConfig& c, int64_t layer, const StepShape& s) {
  const double n = static_cast<double>(s.batch * s.seq_len), t = static_cast<double>(s.seq_len);
  const double ch = static_cast<double>(c.n_embd), d = static_cast<double>(c.head_dim());
  // Forward + backward: three times the forward's matrix products (QKV, scores and values, out).
  double work = 3 * (2 * n * ch * 3 * d + 2 * 2 * s.batch * t * t * d + 2 * n * d * ch) + kElementwiseFlops * 3 * n * t;
  double bytes = (3 * d * ch + 3 * d + d * ch) * bytes_per_value(c, s);
  return {block_name(layer) + ".head", UnitKind::Head, layer, c.n_head, c.head_dim(), true, {work, bytes}};
}

CausalSelfAttention::CausalSelfAttention(const std::string& prefix, const GPTConfig& c,
                                         std::shared_ptr<const UnitGroup> group,
                                         std::vector<int64_t> heads, Communicator* comm)
    : Module(prefix),
      c_attn(add_module(std::make_unique<Linear>(child_prefix("c_attn"), qkv_spec(c, group, heads),
                                                 c.seed, c.dtype, comm))),
      c_proj(add_module(std::make_unique<Linear>(child_prefix("c_proj"), proj_spec(c, group, heads),
                                                 c.seed, c.dtype, comm))) {}

int64_t CausalSelfAttention::active_heads() const { return c_attn.weight.active_units(); }

Tensor CausalSelfAttention::forward(const Tensor& x) const {
  Tensor qkv = c_attn.forward(x);                         // [B, T, U*3*D] (U: active heads)
  Tensor y = attention(qkv, active_heads(), numerics());  // [B, T, U*D]
  return c_proj.forward(y);                               // [B, T, C]
}

}  // namespace flextp
