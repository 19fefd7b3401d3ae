#include "nn/config.h"

#include <unistd.h>

#include "core/error.h"
#include "core/shape.h"
#include "nn/mlp.h"

namespace flextp {

namespace {

// Bytes of memory this machine has (0 when it cannot tell).
int64_t physical_memory_bytes() {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page : 0;
}

std::string gigabytes(double bytes) { return std::to_string(static_cast<int64_t>(bytes / 1e9 + 0.5)) + " GB"; }

}  // namespace

std::optional<int64_t> GPTConfig::parameter_bound() const {
  const int64_t c = n_embd;
  // Per block: attention 4 C^2 + 4 C, two layer norms 4 C, an MLP of at most three C x 4C
  // matrices (SwiGLU) with their biases.
  std::optional<int64_t> squares = checked_mul(c, c), per_block;
  if (squares) per_block = checked_mul(*squares, 16);
  if (per_block) per_block = checked_mul(c, 32).value() + *per_block;  // c <= kMaxModelSize: no overflow
  std::optional<int64_t> blocks = per_block ? checked_mul(*per_block, n_layer) : std::nullopt;
  std::optional<int64_t> tables = checked_mul(padded_vocab() + n_positions, c);
  if (!blocks || !tables || *blocks > INT64_MAX - *tables - 2 * c) return std::nullopt;
  return *blocks + *tables + 2 * c;
}

void GPTConfig::validate() const {
  for (auto [name, value] : {std::pair<const char*, int64_t>{"vocab_size", vocab_size}, {"n_positions", n_positions},
                             {"n_layer", n_layer}, {"n_head", n_head}, {"n_embd", n_embd}, {"mlp_unit", mlp_unit},
                             {"vocab_unit", vocab_unit}, {"the vocabulary padding multiple", vocab_pad}})
    FLEXTP_CHECK(value <= kMaxModelSize, name, " ", value, " exceeds ", kMaxModelSize,
                 ", the largest size flextp takes (token ids and positions are 32-bit)");
  FLEXTP_CHECK(vocab_size > 0, "vocabulary size must be positive, got ", vocab_size);
  FLEXTP_CHECK(n_positions > 0, "n_positions (sequence length) must be positive, got ", n_positions);
  FLEXTP_CHECK(n_layer > 0, "n_layer must be positive, got ", n_layer);
  FLEXTP_CHECK(n_head > 0, "n_head must be positive, got ", n_head);
  FLEXTP_CHECK(n_embd > 0, "n_embd must be positive, got ", n_embd);
  FLEXTP_CHECK(n_embd % n_head == 0, "n_embd ", n_embd, " is not divisible by n_head ", n_head,
               ": every head needs n_embd / n_head channels");
  FLEXTP_CHECK(mlp_unit > 0 && mlp_hidden() % mlp_unit == 0, "mlp_unit ", mlp_unit,
               " must divide the MLP width 4 * n_embd = ", mlp_hidden());
  mlp_registration(mlp);  // refuses an unknown kind, naming the known ones
  FLEXTP_CHECK(vocab_unit > 0, "vocab_unit must be positive, got ", vocab_unit);
  FLEXTP_CHECK(vocab_pad > 0, "the vocabulary padding multiple must be positive, got ", vocab_pad);
  FLEXTP_CHECK(dropout >= 0 && dropout < 1, "dropout must be in [0, 1), got ", dropout);
  FLEXTP_CHECK(dtype == DType::F32 || dtype == DType::F64, "model dtype must be f32 or f64");
  // A model that cannot fit is refused now, not after minutes of growing memory.
  std::optional<int64_t> parameters = parameter_bound();
  const double weight_bytes = parameters ? static_cast<double>(*parameters) * dtype_size(dtype) : 0;
  const int64_t memory = physical_memory_bytes();
  FLEXTP_CHECK(parameters && (memory == 0 || weight_bytes <= static_cast<double>(memory)), "n_layer ", n_layer,
               ", n_embd ", n_embd, ", vocab_size ", vocab_size, " and n_positions ", n_positions, " make ",
               parameters ? "about " + std::to_string(*parameters) + " parameters (" + gigabytes(weight_bytes) +
                                " of weights alone)"
                          : std::string("more parameters than 64 bits count"),
               ", more than this machine's ", gigabytes(static_cast<double>(memory)), " of memory");
}

std::string GPTConfig::str() const {
  return "n_layer " + std::to_string(n_layer) + ", n_head " + std::to_string(n_head) +
         ", n_embd " + std::to_string(n_embd) + ", mlp " + mlp + ", vocab " + std::to_string(vocab_size) +
         ", n_positions " + std::to_string(n_positions);
}

}  // namespace flextp
