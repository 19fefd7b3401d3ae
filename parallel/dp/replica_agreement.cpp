#include "parallel/dp/replica_agreement.h"

#include "core/error.h"
#include "parallel/comm/rank_agreement.h"

namespace flextp {

void share_comm_model(Communicator& dp, CommCostModel& model) {
  if (dp.size() == 1) return;
  std::vector<double> numbers{static_cast<double>(model.reduce), static_cast<double>(model.transfer)};
  for (const auto& [name, fit] : model.fits) numbers.insert(numbers.end(), {fit.alpha_ms, fit.ms_per_byte});
  Tensor t = Tensor::from_vector<double>(numbers, {static_cast<int64_t>(numbers.size())});
  dp.broadcast(t, 0);  // the same fits (the same names, from one calibration code) on every replica
  numbers = t.to_vector<double>();
  model.reduce = static_cast<ReduceMethod>(static_cast<int>(numbers[0]));
  model.transfer = static_cast<TransferMethod>(static_cast<int>(numbers[1]));
  size_t at = 2;
  for (auto& [name, fit] : model.fits) fit.alpha_ms = numbers[at++], fit.ms_per_byte = numbers[at++];
}

void check_replicas_agree(Communicator& dp, const Partition& partition, const std::vector<Parameter*>& params) {
  if (dp.size() == 1) return;
  std::string layout = partition.str();
  for (const Parameter* p : params) layout += "|" + std::to_string(p->active_rows);
  uint64_t hash = fingerprint(layout);
  // The hash as two 32-bit halves; the largest and the smallest over the group must be equal.
  Tensor mine = Tensor::from_vector<int32_t>({static_cast<int32_t>(static_cast<uint32_t>(hash >> 32)),
                                              static_cast<int32_t>(static_cast<uint32_t>(hash))}, {2});
  Tensor all = Tensor::empty({2 * dp.size()}, DType::I32);
  dp.all_gather(mine, all);
  std::vector<int32_t> got = all.to_vector<int32_t>();
  std::string differ;
  for (int r = 1; r < dp.size(); ++r)
    if (got[2 * r] != got[0] || got[2 * r + 1] != got[1]) differ += (differ.empty() ? "" : ", ") + std::to_string(r);
  FLEXTP_CHECK(differ.empty(), "the replicas' partitions differ (replica 0 and replica ", differ,
               " of this tensor-parallel slot): their gradients cannot be summed slot by slot. This replica holds ",
               partition.str());
}

}  // namespace flextp
