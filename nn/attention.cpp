#include "nn/attention.h"

#include <cmath>

#include "core/ops/attention.h"

namespace flextp {
namespace {
// The partition group of this layer's heads: "h.3.attn" -> "h.3.head".
std::string head_group(const std::string& prefix) {
  return prefix.substr(0, prefix.rfind('.')) + ".head";
}
LinearSpec qkv_spec(const GPTConfig& c, const std::string& prefix, const std::vector<int64_t>& heads) {
  return {c.n_embd, 3 * c.n_embd, Split::Column, "head", head_group(prefix), 3 * c.head_dim(), heads, 0.02};
}
LinearSpec proj_spec(const GPTConfig& c, const std::string& prefix, const std::vector<int64_t>& heads) {
  // GPT-2 scales residual projections by 1/sqrt(2 L): two per block add into the stream.
  return {c.n_embd, c.n_embd, Split::Row, "head", head_group(prefix), c.head_dim(), heads,
          0.02 / std::sqrt(2.0 * c.n_layer)};
}
}  // namespace

CausalSelfAttention::CausalSelfAttention(const std::string& prefix, const GPTConfig& c,
                                         std::vector<int64_t> heads, Communicator* comm)
    : Module(prefix),
      c_attn(add_module(std::make_unique<Linear>(child_prefix("c_attn"), qkv_spec(c, prefix, heads),
                                                 c.seed, c.dtype, comm))),
      c_proj(add_module(std::make_unique<Linear>(child_prefix("c_proj"), proj_spec(c, prefix, heads),
                                                 c.seed, c.dtype, comm))) {}

int64_t CausalSelfAttention::active_heads() const {
  const Parameter& w = c_attn.weight;
  return w.resized() ? w.active_rows / w.unit_rows : local_heads();
}

Tensor CausalSelfAttention::forward(const Tensor& x) const {
  Tensor qkv = c_attn.forward(x);                         // [B, T, U*3*D] (U: active heads)
  Tensor y = attention(qkv, active_heads(), numerics());  // [B, T, U*D]
  return c_proj.forward(y);                               // [B, T, C]
}

}  // namespace flextp
