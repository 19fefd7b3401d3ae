#include "nn/block.h"

#include "core/ops/dropout.h"
#include "core/ops/elementwise.h"
#include "core/random.h"

namespace flextp {

Block::Block(int64_t layer, const GPTConfig& c, const UnitRegistry& units, std::vector<int64_t> heads,
             std::vector<int64_t> mlp_blocks, Communicator* comm)
    : Module(block_name(layer)),
      ln_1(add_module(std::make_unique<LayerNorm>(child_prefix("ln_1"), c))),
      attn(add_module(std::make_unique<CausalSelfAttention>(
          child_prefix("attn"), c, units.group(UnitKind::Head, layer), std::move(heads), comm))),
      ln_2(add_module(std::make_unique<LayerNorm>(child_prefix("ln_2"), c))),
      mlp(add_module(mlp_registration(c.mlp).make(child_prefix("mlp"), c, units.group(UnitKind::Mlp, layer),
                                          std::move(mlp_blocks), comm))),
      attn_stream_(rng::stream_id((prefix() + ".attn").c_str())),
      mlp_stream_(rng::stream_id((prefix() + ".mlp").c_str())) {}

Tensor Block::forward(const Tensor& x, double p, uint64_t seed, uint64_t first) const {
  // The residual stream is replicated, so its dropout masks are the same on every rank.
  Tensor h = add(x, dropout(attn.forward(ln_1.forward(x)), p, seed, attn_stream_, first));  // [B, T, C]
  return add(h, dropout(mlp.forward(ln_2.forward(h)), p, seed, mlp_stream_, first));     // [B, T, C]
}

}  // namespace flextp
