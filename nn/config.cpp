#include "nn/config.h"

#include <unistd.h>

#include <type_traits>

#include "core/error.h"
#include "core/shape.h"
#include "core/text_fields.h"
#include "nn/mlp.h"

namespace flextp {

namespace {

// Bytes of memory this machine has (0 when it cannot tell).
int64_t physical_memory_bytes() {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page : 0;
}

std::string gigabytes(double bytes) { return std::to_string(static_cast<int64_t>(bytes / 1e9 + 0.5)) + " GB"; }

// A field's value as text and back: text_fields.h's, and a DType, which no file records.
template <typename T>
std::string field_text(const T& v) {
  return value_text(v);
}
std::string field_text(DType v) { return dtype_name(v); }
template <typename T>
bool field_from_text(const std::string& s, T& v) {
  return value_from_text(s, v);
}
bool field_from_text(const std::string&, DType&) { return false; }

const char* field_kind(int64_t) { return "an integer"; }
const char* field_kind(uint64_t) { return "an unsigned integer"; }
const char* field_kind(double) { return "a number"; }
const char* field_kind(const std::string&) { return "text"; }
const char* field_kind(DType) { return "a dtype"; }

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
  // Every whole-number field is a size or a count.
  for_each_field(*this, [](const ConfigField& f, const auto& value) {
    if constexpr (std::is_same_v<std::decay_t<decltype(value)>, int64_t>) {
      FLEXTP_CHECK(value <= kMaxModelSize, f.name, " ", value, " exceeds ", kMaxModelSize,
                   ", the largest size flextp takes (token ids and positions are 32-bit)");
      FLEXTP_CHECK(value > 0, f.name, " must be positive, got ", value);
    }
  });
  FLEXTP_CHECK(n_embd % n_head == 0, "n_embd ", n_embd, " is not divisible by n_head ", n_head,
               ": every head needs n_embd / n_head channels");
  FLEXTP_CHECK(mlp_hidden() % mlp_unit == 0, "mlp_unit ", mlp_unit,
               " must divide the MLP width 4 * n_embd = ", mlp_hidden());
  mlp_registration(mlp);  // refuses an unknown kind, naming the known ones
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
  std::string out;
  for_each_field(*this, [&](const ConfigField& f, const auto& value) {
    if (f.shown) out += (out.empty() ? "" : ", ") + std::string(f.shown) + " " + field_text(value);
  });
  return out;
}

std::map<std::string, std::string> saved_fields(const GPTConfig& c) {
  std::map<std::string, std::string> out;
  for_each_field(c, [&](const ConfigField& f, const auto& value) {
    if (f.saved) out[f.name] = field_text(value);
  });
  return out;
}

GPTConfig config_of_saved_fields(const std::map<std::string, std::string>& fields, const std::string& path) {
  GPTConfig c;
  for_each_field(c, [&](const ConfigField& f, auto& value) {
    if (!f.saved) return;
    auto it = fields.find(f.name);
    FLEXTP_CHECK(it != fields.end() || f.if_missing, path, ": metadata has no '", f.name, "'");
    const std::string& text = it != fields.end() ? it->second : std::string(f.if_missing);
    FLEXTP_CHECK(field_from_text(text, value), path, ": metadata '", f.name, "' = '", text, "' is not ",
                 field_kind(value));
  });
  return c;
}

}  // namespace flextp
