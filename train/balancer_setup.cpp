#include "train/balancer_setup.h"

#include "nn/unit_costs.h"
#include "nn/units.h"
#include "parallel/comm/cost_model.h"
#include "train/flags.h"

namespace flextp {

namespace {

CommCostModel communication_model(Communicator& comm, const TrainOptions& o, const GPTConfig& c,
                                  const ModelCosts& costs, Device device, int64_t micro_windows) {
  // The row-parallel reductions carry one micro-step's activations.
  double reduce_bytes = 4.0 * micro_windows * o.data.seq_len * c.n_embd;
  // About one head per layer moving.
  double transfer_bytes = costs.unit(UnitRegistry(c).group(UnitKind::Head, 0)->name).bytes * c.n_layer;
  CommCostModel m;
  if (comm.size() > 1)
    m = calibrate(comm, calibration_sizes(reduce_bytes, transfer_bytes), reduce_bytes, transfer_bytes, 5, device);
  with_flag("--comm", [&] { apply_comm_choice(m, o.parallel.comm); });
  return m;
}

}  // namespace

std::unique_ptr<Balancer> make_balancer(StepClock& clock, const ProcessGroups& groups, const TrainOptions& o,
                                        const GPTConfig& c, const Partition& partition, Device device,
                                        int optimizer_slots, TrainLog& log) {
  ModelCosts costs = gpt_model_costs(c, {groups.share, o.data.seq_len, optimizer_slots});
  CommCostModel model = communication_model(clock.untimed(), o, c, costs, device, groups.micro_windows);
  clock.set_reduce_method(model.reduce);
  if (clock.size() > 1) log.say("communication (fitted on this communicator):\n%s", model.table().c_str());
  BalanceOptions balancing = o.balancing;
  balancing.replicas = groups.grid.dp;
  return std::make_unique<Balancer>(clock.untimed(), costs, partition, model, balancing);
}

}  // namespace flextp
