#include "parallel/dp/micro_batches.h"

#include <cmath>

#include "core/error.h"
#include "core/ops/elementwise.h"
#include "core/ops/shape_ops.h"
#include "parallel/dp/grid.h"

namespace flextp {

double accumulate_gradients(const Batch& share, int64_t micro, int64_t global_windows, const LossFn& loss) {
  const int64_t windows = share.ids.size(0);
  FLEXTP_CHECK(windows > 0 && windows <= global_windows, "a share of ", windows, " windows out of ", global_windows);
  const int64_t steps = micro_steps(windows, micro), per = windows / steps;
  double total = 0;
  for (int64_t m = 0; m < steps; ++m) {
    bool whole = steps == 1;
    Tensor ids = whole ? share.ids : slice_rows(share.ids, m * per, per);
    Tensor targets = whole ? share.targets : slice_rows(share.targets, m * per, per);
    Tensor l = loss(ids, targets, m * per);
    // One micro-step of the whole job's windows is today's step: no scaling, bit for bit.
    if (per != global_windows) l = scale(l, static_cast<double>(per) / static_cast<double>(global_windows));
    double value = l.item();
    total += value;
    if (!std::isfinite(value)) return value;
    l.backward();
  }
  return total;
}

}  // namespace flextp
