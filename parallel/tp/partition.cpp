#include "parallel/tp/partition.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/text_fields.h"

namespace flextp {
namespace {

int64_t parse_int(const std::string& s, const std::string& spec) {
  std::optional<int64_t> v = whole_int(s);
  FLEXTP_CHECK(v, "partition spec '", spec, "': '", s, "' is not a unit number");
  return *v;
}

}  // namespace

Partition Partition::proportional(const std::vector<UnitGroup>& groups, const std::vector<double>& w) {
  FLEXTP_CHECK(!w.empty(), "a partition needs at least one rank");
  double largest = 0;
  for (double x : w) {
    FLEXTP_CHECK(std::isfinite(x) && x > 0, "tensor-parallel weights must be positive, got ", x);
    largest = std::max(largest, x);
  }
  // Scaled to the largest weight, the weights lie in (0, 1] and their sum in (0, ranks]: no sum
  // or share overflows, whatever finite positive weights the balancer or a user gives.
  double total = 0;
  for (double x : w) total += x / largest;
  Partition p;
  p.ranks_ = static_cast<int>(w.size());
  for (const UnitGroup& g : groups) {
    // Largest remainder: floor shares, then the biggest fractional parts get one more unit
    // (ties to the lower rank, so every rank computes the same split).
    std::vector<int64_t> count(w.size());
    std::vector<std::pair<double, int>> rest;
    int64_t given = 0;
    for (size_t r = 0; r < w.size(); ++r) {
      double share = g.units * (w[r] / largest) / total;
      count[r] = static_cast<int64_t>(std::floor(share));
      given += count[r];
      rest.push_back({share - count[r], static_cast<int>(r)});
    }
    // The floors lose less than one unit per rank; rounding must not have made that more.
    FLEXTP_CHECK(given <= g.units && g.units - given <= static_cast<int64_t>(w.size()), "unit group '", g.name,
                 "': ", g.units, " units split as ", given, " whole shares among ", w.size(), " ranks");
    std::stable_sort(rest.begin(), rest.end(), [](auto a, auto b) { return a.first > b.first; });
    for (int64_t i = 0; i < g.units - given; ++i) ++count[rest[i].second];
    std::vector<int> owners;
    for (size_t r = 0; r < w.size(); ++r) owners.insert(owners.end(), count[r], static_cast<int>(r));
    p.owners_[g.name] = owners;
  }
  return p;
}

Partition Partition::even(const std::vector<UnitGroup>& groups, int ranks) {
  return proportional(groups, std::vector<double>(ranks, 1.0));
}

const std::vector<int>& Partition::owners(const std::string& group) const {
  auto it = owners_.find(group);
  FLEXTP_CHECK(it != owners_.end(), "partition has no unit group '", group, "'");
  return it->second;
}

void Partition::set_owners(const std::string& group, std::vector<int> owners) {
  for (int o : owners)
    FLEXTP_CHECK(o >= 0 && o < ranks_, "unit group '", group, "': owner ", o, " is not a rank of ", ranks_);
  owners_[group] = std::move(owners);
}

std::vector<int64_t> Partition::units_of(const std::string& group, int rank) const {
  std::vector<int64_t> out;
  const std::vector<int>& o = owners(group);
  for (size_t u = 0; u < o.size(); ++u)
    if (o[u] == rank) out.push_back(static_cast<int64_t>(u));
  return out;
}

std::string Partition::str() const {
  std::string s;
  for (const auto& [g, owners] : owners_) {
    std::vector<int64_t> count(ranks_);
    for (int o : owners) ++count[o];
    s += (s.empty() ? "" : "  ") + g + " ";
    for (int r = 0; r < ranks_; ++r) s += (r ? ":" : "") + std::to_string(count[r]);
  }
  return s;
}

std::vector<double> parse_tp_weights(const std::string& spec, int ranks) {
  std::vector<double> w;
  for (const std::string& part : split_fields(spec, ',')) {
    std::optional<double> v = whole_double(part);
    FLEXTP_CHECK(v, "tensor-parallel weight list '", spec, "': '", part, "' is not a number");
    w.push_back(*v);
  }
  FLEXTP_CHECK(static_cast<int>(w.size()) == ranks, "tensor-parallel weight list '", spec, "' has ", w.size(),
               " weights for ", ranks, " ranks");
  for (double x : w) {
    FLEXTP_CHECK(std::isfinite(x), "tensor-parallel weight list '", spec, "': weight ", x, " is not a finite number");
    FLEXTP_CHECK(x > 0, "tensor-parallel weight list '", spec, "': weight ", x, " must be positive");
  }
  // Weights are relative speeds; a ratio past this is a typo, not a machine.
  constexpr double kMaxRatio = 1e6;
  auto [lightest, heaviest] = std::minmax_element(w.begin(), w.end());
  FLEXTP_CHECK(*heaviest <= kMaxRatio * *lightest, "tensor-parallel weight list '", spec, "': weight ", *heaviest,
               " is more than ", kMaxRatio, " times weight ", *lightest, " (weights are relative speeds)");
  return w;
}

UnitCounts units_per_kind(const std::vector<UnitGroup>& groups, const Partition& p, int rank) {
  UnitCounts count;
  for (const UnitGroup& g : groups)
    for (int o : p.owners(g.name)) count.held[g.kind] += o == rank;
  return count;
}

void apply_tp_assignment(Partition& p, const std::vector<UnitGroup>& groups, const std::string& spec) {
  size_t eq = spec.find('=');
  FLEXTP_CHECK(eq != std::string::npos, "partition spec '", spec, "' needs KIND=UNITS|UNITS...");
  std::string kind = spec.substr(0, eq), layer;
  size_t at = kind.find('@');
  if (at != std::string::npos) {
    layer = kind.substr(at + 1);
    kind = kind.substr(0, at);
  }
  FLEXTP_CHECK(kind == "head" || kind == "mlp" || kind == "vocab", "partition spec '", spec,
               "': unknown unit kind '", kind, "' (head, mlp or vocab)");
  std::vector<std::string> per_rank = split_fields(spec.substr(eq + 1), '|');
  FLEXTP_CHECK(static_cast<int>(per_rank.size()) == p.ranks(), "partition spec '", spec, "' lists ",
               per_rank.size(), " ranks but there are ", p.ranks());
  bool matched = false;
  for (const UnitGroup& g : groups) {
    if (unit_kind_name(g.kind) != kind) continue;
    if (!layer.empty() && (g.layer < 0 || std::to_string(g.layer) != layer)) continue;
    matched = true;
    std::vector<int> owners(g.units, -1);
    for (int r = 0; r < p.ranks(); ++r) {
      if (per_rank[r].empty()) continue;
      for (const std::string& item : split_fields(per_rank[r], ',')) {
        size_t dash = item.find('-', 1);
        int64_t lo = parse_int(item.substr(0, dash), spec);
        int64_t hi = dash == std::string::npos ? lo : parse_int(item.substr(dash + 1), spec);
        FLEXTP_CHECK(lo >= 0 && lo <= hi && hi < g.units, "partition spec '", spec, "': units ",
                     item, " are outside ", g.name, "'s ", g.units, " units");
        for (int64_t u = lo; u <= hi; ++u) {
          FLEXTP_CHECK(owners[u] == -1, "partition spec '", spec, "': unit ", u, " of ", g.name,
                       " is owned twice (ranks ", owners[u], " and ", r, ")");
          owners[u] = r;
        }
      }
    }
    for (int64_t u = 0; u < g.units; ++u)
      FLEXTP_CHECK(owners[u] != -1, "partition spec '", spec, "': unit ", u, " of ", g.name,
                   " is owned by no rank");
    p.set_owners(g.name, owners);
  }
  FLEXTP_CHECK(matched, "partition spec '", spec, "' names no unit group of this model");
}

}  // namespace flextp
