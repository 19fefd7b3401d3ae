#include "nn/generate.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/autograd.h"
#include "core/random.h"

namespace flextp {

int32_t sample_token(const std::vector<double>& last, const SampleOptions& o, uint64_t draw) {
  if (o.temperature == 0) return static_cast<int32_t>(std::max_element(last.begin(), last.end()) - last.begin());
  const int64_t v = static_cast<int64_t>(last.size());
  std::vector<int32_t> order(v);
  std::iota(order.begin(), order.end(), 0);
  int64_t k = o.top_k > 0 ? std::min(o.top_k, v) : v;
  std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int32_t a, int32_t b) { return last[a] > last[b]; });
  double m = last[order[0]], z = 0;
  std::vector<double> p(k);
  for (int64_t j = 0; j < k; ++j) z += p[j] = std::exp((last[order[j]] - m) / o.temperature);
  double u = rng::uniform(draw, rng::stream_id("sample"), o.seed) * z;
  int64_t j = 0;
  while (j < k - 1 && u >= p[j]) u -= p[j++];
  return order[j];
}

std::vector<int32_t> generate(GPT& model, std::vector<int32_t> tokens, const SampleOptions& o) {
  FLEXTP_CHECK(!tokens.empty(), "generate: the prompt must hold at least one token");
  FLEXTP_CHECK(o.temperature >= 0, "sampling temperature must be >= 0, got ", o.temperature);
  FLEXTP_CHECK(o.top_k >= 0, "sampling top-k must be >= 0, got ", o.top_k);
  NoGradGuard ng;
  model.set_training(false);
  const int64_t v = model.config().vocab_size, window = model.config().n_positions;
  for (int64_t i = 0; i < o.tokens; ++i) {
    int64_t start = std::max<int64_t>(0, static_cast<int64_t>(tokens.size()) - window);
    std::vector<int32_t> ctx(tokens.begin() + start, tokens.end());
    int64_t t = static_cast<int64_t>(ctx.size());
    // The real ids' logits only: the padded vocabulary rows (GPTConfig::padded_vocab) never
    // reach the sampler.
    Tensor logits = model.logits(Tensor::from_vector(ctx, {1, t}));  // [1, t, V]
    FLEXTP_CHECK(logits.size(-1) == v, "generate: ", logits.size(-1), " logits for a vocabulary of ", v);
    std::vector<double> last(v);
    Tensor l64 = logits.dtype() == DType::F64 ? logits : logits.to(Device::cpu()).to(DType::F64);
    const double* pl = l64.data<double>() + (t - 1) * v;
    std::copy(pl, pl + v, last.begin());
    tokens.push_back(sample_token(last, o, static_cast<uint64_t>(i)));
  }
  return tokens;
}

}  // namespace flextp
