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
  std::string differ = ranks_differing_from_first(dp, {fingerprint(layout)})[0];
  FLEXTP_CHECK(differ.empty(), "the replicas' partitions differ (replica 0 and replica ", differ,
               " of this tensor-parallel slot): their gradients cannot be summed slot by slot. This replica holds ",
               partition.str());
}

}  // namespace flextp
