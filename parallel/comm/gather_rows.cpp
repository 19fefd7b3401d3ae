#include "parallel/comm/gather_rows.h"

namespace flextp {

std::vector<std::vector<double>> all_gather_rows(Communicator& comm, const std::vector<double>& mine) {
  const int n = comm.size();
  const int64_t width = static_cast<int64_t>(mine.size());
  Tensor in = Tensor::from_vector(mine, {1, width}), all = Tensor::empty({n, width}, DType::F64);
  comm.all_gather(in, all);
  std::vector<double> flat = all.to_vector<double>();
  std::vector<std::vector<double>> rows(n);
  for (int r = 0; r < n; ++r) rows[r].assign(flat.begin() + r * width, flat.begin() + (r + 1) * width);
  return rows;
}

}  // namespace flextp
