#pragma once
// What the tests read of stale imputation (nn/linear.h): every known running mean of a model's
// row-split layers, from the weights' slot where the product keeps them, in logical unit order
// whatever the partition.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "nn/gpt.h"
#include "parallel/tp/unit_gather.h"

namespace flextp::test {

// By "<layer> unit <u>": the units whose mean is known (gathered from every rank of comm, which
// may be null for one process; every rank calls).
inline std::map<std::string, std::vector<double>> known_stale_means(const GPT& m, Communicator* comm = nullptr) {
  std::map<std::string, std::vector<double>> out;
  for (const Linear* l : m.row_split_layers()) {
    const Parameter& w = l->weight;
    if (w.replicated()) continue;
    auto slot = w.state.find(kStaleMeanSlot);
    Tensor local = slot != w.state.end() ? slot->second : Tensor::zeros(w.value.shape(), w.value.dtype(), w.value.device());
    Tensor all = gather_logical(w, local, comm).to(Device::cpu()).to(DType::F64);  // [logical rows, out]
    const int64_t width = all.size(1);
    const std::vector<double> v = all.to_vector<double>();
    for (int64_t u = 0, row = 0; row < w.logical_rows(); row += w.rows_of_unit(u), ++u) {
      std::vector<double> mean(v.begin() + row * width, v.begin() + (row + 1) * width);
      if (std::any_of(mean.begin(), mean.end(), [](double x) { return x != 0; }))
        out[l->prefix() + " unit " + std::to_string(u)] = mean;
    }
  }
  return out;
}

}  // namespace flextp::test
