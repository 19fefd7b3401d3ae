#pragma once
// The resizer: the arithmetic and the action of priority resizing, which the policies `resize`
// and `hybrid` decide on (parallel/balance/policies/). From the ranks' speeds it computes how
// many units of each resizable group (the unit registry says which: the attention heads and the
// MLP blocks) a rank can finish in the time the fastest rank needs for its share, and skips the
// rest, least important first. Importance is a running score per unit: first-order Taylor
// |w * g| summed over the unit's rows (taylor), the squared weight norm (norm), or a seeded
// random draw (random). Resizing is local: no data moves.
#include <map>
#include <string>
#include <vector>

#include "core/parameter.h"
#include "parallel/tp/partition.h"

namespace flextp {

struct ResizeOptions {
  std::string priority = "taylor";  // taylor | norm | random
  double smoothing = 0.9;           // weight of the old score in the running average
  double tolerance = 0.25;          // a rank within 25% of the target time keeps all its units
  uint64_t seed = 0;
};

class Resizer {
 public:
  explicit Resizer(ResizeOptions o);
  // After backward, before the optimizer step: updates the scores of the active units.
  void observe(const std::vector<Parameter*>& params, int64_t step);
  // Every group in `keep` whose parameters are declared resizable runs only its keep[group]
  // most important local units; every other group runs all of its units. Returns the units
  // skipped per group (only groups that skip some).
  std::map<std::string, int64_t> resize(const std::vector<Parameter*>& params,
                                        const std::map<std::string, int64_t>& keep) const;
  // Makes the `keep` most important local units of a group its active ones (active-first order,
  // moving rows only when the set changes); the rest are skipped.
  void keep_most_important(const std::vector<Parameter*>& group_params, const std::string& group,
                           int64_t keep) const;
  // Running importance of a unit of a group (0 when never seen).
  double importance(const std::string& group, int64_t unit) const;
  // Units of a group that `rank` keeps at these speeds (the group's owner list; all ranks agree).
  int64_t keep_count(const std::vector<int>& owners, const std::vector<double>& speed, int rank) const;
  // The share of this rank's importance (over its resizable units) that resizing at these
  // speeds would skip: 0 when it skips nothing, 1 when everything.
  double skipped_importance(const std::vector<Parameter*>& params, const Partition& partition,
                            const std::vector<double>& speed, int rank) const;

 private:
  ResizeOptions o_;
  std::map<std::string, std::map<int64_t, double>> score_;
};

}  // namespace flextp
