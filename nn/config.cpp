#include "nn/config.h"

#include "core/error.h"
#include "nn/mlp_layer.h"

namespace flextp {

void GPTConfig::validate() const {
  FLEXTP_CHECK(vocab_size > 0, "vocabulary size must be positive, got ", vocab_size);
  FLEXTP_CHECK(n_positions > 0, "n_positions (sequence length) must be positive, got ", n_positions);
  FLEXTP_CHECK(n_layer > 0, "n_layer must be positive, got ", n_layer);
  FLEXTP_CHECK(n_head > 0, "n_head must be positive, got ", n_head);
  FLEXTP_CHECK(n_embd > 0, "n_embd must be positive, got ", n_embd);
  FLEXTP_CHECK(n_embd % n_head == 0, "n_embd ", n_embd, " is not divisible by n_head ", n_head,
               ": every head needs n_embd / n_head channels");
  FLEXTP_CHECK(mlp_unit > 0 && mlp_hidden() % mlp_unit == 0, "mlp_unit ", mlp_unit,
               " must divide the MLP width 4 * n_embd = ", mlp_hidden());
  mlp_kind(mlp);  // refuses an unknown kind, naming the known ones
  FLEXTP_CHECK(vocab_unit > 0, "vocab_unit must be positive, got ", vocab_unit);
  FLEXTP_CHECK(vocab_pad > 0, "the vocabulary padding multiple must be positive, got ", vocab_pad);
  FLEXTP_CHECK(dropout >= 0 && dropout < 1, "dropout must be in [0, 1), got ", dropout);
  FLEXTP_CHECK(dtype == DType::F32 || dtype == DType::F64, "model dtype must be f32 or f64");
}

std::string GPTConfig::str() const {
  return "n_layer " + std::to_string(n_layer) + ", n_head " + std::to_string(n_head) +
         ", n_embd " + std::to_string(n_embd) + ", mlp " + mlp + ", vocab " + std::to_string(vocab_size) +
         ", n_positions " + std::to_string(n_positions);
}

}  // namespace flextp
