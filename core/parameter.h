#pragma once
// A trainable parameter: its value (whose .grad() is the gradient), state slots of the same shape
// (the optimizer's: Adam's m and v, SGD's momentum), and how its rows split into tensor-parallel
// units. Everything a unit needs in order to move to another rank is here, so optim/ and parallel/
// work on parameters without knowing the layers: migration, resizing's reordering and checkpoints
// carry every slot.
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "core/unit_layout.h"

namespace flextp {

struct Parameter {
  std::string name;  // logical name, the same on every rank (Hugging Face GPT-2 names)
  Tensor value;      // a leaf that requires grad
  std::map<std::string, Tensor> state;  // slots by name, each of value's shape
  // The slot `name`, created as zeros of value's shape (on its device) when missing or of another
  // shape: the optimizer's first step, or a repartition before the first step.
  Tensor& slot(const std::string& name) {
    auto it = state.find(name);
    if (it == state.end() || it->second.shape() != value.shape())
      it = state.insert_or_assign(name, Tensor::zeros(value.shape(), value.dtype(), value.device())).first;
    return it->second;
  }
  bool weight_decay = true;

  // Units: rows of `value` come in blocks of unit_rows() rows, one block per owned unit, in the
  // owning layer's local order. No layout: replicated (the same on every rank).
  std::shared_ptr<const UnitLayout> layout;
  std::vector<int64_t> units;  // the units whose rows `value` holds, in that order
  // Priority resizing: only the first active_rows rows take part in compute and updates
  // (-1: all). The rest keep their weights and optimizer state until they come back.
  int64_t active_rows = -1;
  // Rows past the active ones that the optimizer updates as well, as (first row, rows): units this
  // rank skipped but another data-parallel replica computed (parallel/dp/gradient_sync.h), so that
  // every replica applies the same update to them. Empty with one replica.
  std::vector<std::pair<int64_t, int64_t>> extra_rows;

  bool replicated() const { return !layout; }
  bool resized() const { return active_rows >= 0 && active_rows < value.size(0); }
  Tensor grad() const { return value.grad(); }
  // The unit group (only for a parameter with units).
  const UnitGroup& group() const { return *layout->group; }
  int64_t unit_rows() const { return layout ? layout->unit_rows : 0; }
  // Rows of the whole logical parameter: all units' rows, or value's own for a replicated one.
  int64_t logical_rows() const { return layout ? layout->logical_rows : (value.ndim() ? value.size(0) : 1); }
  // Rows of unit u in the logical parameter.
  int64_t rows_of_unit(int64_t u) const { return layout->rows_of_unit(u); }
  // Rows of the first n local units (in local order).
  int64_t rows_of_first_units(int64_t n) const {
    int64_t rows = 0;
    for (int64_t i = 0; i < n; ++i) rows += rows_of_unit(units[i]);
    return rows;
  }
  // Local units in use: all, or those within the active rows of a resized parameter.
  int64_t active_units() const {
    int64_t n = static_cast<int64_t>(units.size());
    if (active_rows < 0) return n;
    int64_t rows = 0, k = 0;
    while (k < n && rows < active_rows) rows += rows_of_unit(units[k++]);
    return k;
  }
};

}  // namespace flextp
