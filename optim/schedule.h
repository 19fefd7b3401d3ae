#pragma once
// Learning rate: linear warm-up over `warmup` steps to max_lr, then cosine decay to min_lr at
// `total` steps (constant min_lr after).
#include <cstdint>

namespace flextp {

struct CosineSchedule {
  double max_lr = 1e-3, min_lr = 1e-4;
  int64_t warmup = 0, total = 1;
  double at(int64_t step) const;  // step counts from 0
};

}  // namespace flextp
