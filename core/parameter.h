#pragma once
// A trainable parameter: its value (whose .grad() is the gradient), the optimizer's state slots
// of the same shape (Adam's m and v, SGD's momentum), and how its rows split into
// tensor-parallel units. Everything a unit needs in order to move to another rank is here, so
// optim/ and parallel/ work on parameters without knowing the layers.
#include <map>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace flextp {

struct Parameter {
  std::string name;  // logical name, the same on every rank (Hugging Face GPT-2 names)
  Tensor value;      // a leaf that requires grad
  std::map<std::string, Tensor> state;  // optimizer slots, each of value's shape
  // The optimizer slot `name`, created as zeros of value's shape (on its device) when missing or
  // of another shape: the optimizer's first step, or a repartition before the first step.
  Tensor& slot(const std::string& name) {
    auto it = state.find(name);
    if (it == state.end() || it->second.shape() != value.shape())
      it = state.insert_or_assign(name, Tensor::zeros(value.shape(), value.dtype(), value.device())).first;
    return it->second;
  }
  bool weight_decay = true;

  // Units: rows of `value` come in blocks of unit_rows rows, one block per owned unit, in the
  // owning layer's local order. unit_rows == 0: replicated (the same on every rank).
  std::string unit_kind;       // "head", "mlp", "vocab" or "" for replicated
  std::string unit_group;      // the partition's group of these units: "h.3.head", "vocab", ...
  int64_t unit_rows = 0;       // rows per unit (the last unit of a kind may have fewer)
  int64_t logical_rows = 0;    // rows of the whole logical parameter (all units)
  std::vector<int64_t> units;  // the units whose rows `value` holds, in that order
  // Priority resizing: only the first active_rows rows take part in compute and updates
  // (-1: all). The rest keep their weights and optimizer state until they come back.
  int64_t active_rows = -1;

  bool replicated() const { return unit_rows == 0; }
  bool resized() const { return active_rows >= 0 && active_rows < value.size(0); }
  Tensor grad() const { return value.grad(); }
  // Rows of unit u in the logical parameter.
  int64_t rows_of_unit(int64_t u) const {
    int64_t left = logical_rows - u * unit_rows;
    return left < unit_rows ? left : unit_rows;
  }
};

}  // namespace flextp
