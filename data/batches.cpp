#include "data/batches.h"

#include "core/error.h"
#include "core/random.h"

namespace flextp {

void split_tokens(const std::vector<int32_t>& all, double val_fraction, std::vector<int32_t>& train,
                  std::vector<int32_t>& val) {
  FLEXTP_CHECK(val_fraction >= 0 && val_fraction < 1, "validation fraction must be in [0, 1), got ",
               val_fraction);
  size_t cut = static_cast<size_t>(static_cast<double>(all.size()) * (1.0 - val_fraction));
  train.assign(all.begin(), all.begin() + cut);
  val.assign(all.begin() + cut, all.end());
}

BatchSampler::BatchSampler(const std::vector<int32_t>* tokens, int64_t batch, int64_t seq_len, uint64_t seed)
    : tokens_(tokens), batch_(batch), seq_len_(seq_len), seed_(seed) {
  FLEXTP_CHECK(batch > 0 && seq_len > 0, "batch size and sequence length must be positive");
  FLEXTP_CHECK(static_cast<int64_t>(tokens->size()) >= seq_len + 1, "training data has ", tokens->size(),
               " tokens, fewer than seq_len + 1 = ", seq_len + 1, ": use more data or a shorter sequence");
}

Batch BatchSampler::at_step(int64_t step, int64_t first, int64_t count) const {
  FLEXTP_CHECK(first >= 0 && count > 0 && first + count <= batch_, "windows [", first, ", ", first + count,
               ") of a step of ", batch_);
  std::vector<int32_t> ids(count * seq_len_), targets(count * seq_len_);
  uint64_t starts = tokens_->size() - seq_len_;  // valid window starts: [0, starts)
  for (int64_t i = 0; i < count; ++i) {
    int64_t b = first + i;
    rng::Philox4 r = rng::philox(static_cast<uint64_t>(step) * batch_ + b, 0x5EED, seed_);
    uint64_t start = ((static_cast<uint64_t>(r.v[1]) << 32) | r.v[0]) % starts;
    for (int64_t t = 0; t < seq_len_; ++t) {
      ids[i * seq_len_ + t] = (*tokens_)[start + t];
      targets[i * seq_len_ + t] = (*tokens_)[start + t + 1];
    }
  }
  return {Tensor::from_vector(ids, {count, seq_len_}), Tensor::from_vector(targets, {count, seq_len_})};
}

int64_t eval_windows(const std::vector<int32_t>& tokens, int64_t seq_len) {
  return tokens.empty() ? 0 : (static_cast<int64_t>(tokens.size()) - 1) / seq_len;
}

Batch eval_batch(const std::vector<int32_t>& tokens, int64_t seq_len, int64_t first, int64_t count) {
  FLEXTP_CHECK(first >= 0 && count > 0 && first + count <= eval_windows(tokens, seq_len),
               "evaluation windows [", first, ", ", first + count, ") do not fit in ", tokens.size(),
               " tokens at seq_len ", seq_len);
  std::vector<int32_t> ids(count * seq_len), targets(count * seq_len);
  for (int64_t w = 0; w < count; ++w)
    for (int64_t t = 0; t < seq_len; ++t) {
      int64_t at = (first + w) * seq_len + t;
      ids[w * seq_len + t] = tokens[at];
      targets[w * seq_len + t] = tokens[at + 1];
    }
  return {Tensor::from_vector(ids, {count, seq_len}), Tensor::from_vector(targets, {count, seq_len})};
}

}  // namespace flextp
