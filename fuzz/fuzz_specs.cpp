// Fuzzes the parsers of user specs: --straggler, --contend, --tp-weights, --tp-assign and
// --straggler-trace files; and the proportional split, of parsed weights and of any doubles (the
// balancer hands it measured speeds), which must own every unit exactly once or refuse; and model
// sizes as flags and checkpoint metadata give them ("VOCAB,POSITIONS,LAYERS,HEADS,EMBD,MLP_UNIT,
// VOCAB_UNIT,PAD"), which GPTConfig::validate refuses before any product of them can wrap.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "core/error.h"
#include "core/text_fields.h"
#include "fuzz/fuzz_file.h"
#include "nn/units.h"
#include "parallel/balance/slowdown.h"
#include "parallel/tp/partition.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string spec(reinterpret_cast<const char*>(data), size);
  auto guard = [](auto&& f) {
    try {
      f();
    } catch (const flextp::Error&) {
    }
  };
  guard([&] { (void)flextp::parse_straggler(spec); });
  guard([&] { (void)flextp::parse_contend(spec); });
  flextp::GPTConfig c;
  c.n_layer = 2, c.n_head = 4, c.n_embd = 32, c.vocab_size = 100, c.n_positions = 16, c.mlp_unit = 32, c.vocab_unit = 16;
  const std::vector<flextp::UnitGroup> groups = flextp::unit_groups(c);
  auto split_in_proportion = [&](const std::vector<double>& weights) {
    flextp::Partition p = flextp::Partition::proportional(groups, weights);
    for (const flextp::UnitGroup& g : groups) {
      const std::vector<int>& owners = p.owners(g.name);
      if (static_cast<int64_t>(owners.size()) != g.units) std::abort();
      for (int o : owners)
        if (o < 0 || o >= static_cast<int>(weights.size())) std::abort();
    }
  };
  guard([&] { split_in_proportion(flextp::parse_tp_weights(spec, 4)); });
  guard([&] {
    std::vector<double> raw(std::min<size_t>(size / sizeof(double), 8));
    if (raw.empty()) return;
    std::memcpy(raw.data(), data, raw.size() * sizeof(double));
    split_in_proportion(raw);
  });
  // Raw doubles rarely land at the ends of the range, where sums and shares overflow or vanish:
  // one byte per weight picks a mantissa and an exponent from both ends and the middle.
  guard([&] {
    static const int exponents[16] = {-1074, -1073, -1022, -500, -30, -1, 0, 1, 2, 30, 500, 1000, 1020, 1021, 1022, 1023};
    std::vector<double> w;
    for (size_t i = 0; i < std::min<size_t>(size, 8); ++i)
      w.push_back(std::ldexp(1.0 + (data[i] & 15) / 16.0, exponents[data[i] >> 4]));
    if (!w.empty()) split_in_proportion(w);
  });
  guard([&] {
    flextp::Partition p = flextp::Partition::even(groups, 3);
    flextp::apply_tp_assignment(p, groups, spec);
  });
  guard([&] {
    std::vector<std::string> fields = flextp::split_fields(spec, ',');
    if (fields.size() != 8) return;
    int64_t v[8];
    for (size_t i = 0; i < 8; ++i) {
      std::optional<int64_t> x = flextp::whole_int(fields[i]);
      if (!x) return;
      v[i] = *x;
    }
    flextp::GPTConfig g;
    g.vocab_size = v[0], g.n_positions = v[1], g.n_layer = v[2], g.n_head = v[3], g.n_embd = v[4];
    g.mlp_unit = v[5], g.vocab_unit = v[6], g.vocab_pad = v[7];
    g.validate();
    if (!g.parameter_bound() || g.n_vocab_units() <= 0 || g.n_mlp_units() <= 0 || g.head_dim() <= 0) std::abort();
  });
  guard([&] {
    flextp::SlowdownSchedule s({}, 3);
    s.load_trace(flextp::fuzz::as_file(data, size, ".csv"));
  });
  return 0;
}
