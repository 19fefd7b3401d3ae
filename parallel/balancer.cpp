#include "parallel/balancer.h"

#include <chrono>

#include "core/error.h"
#include "parallel/resize.h"

namespace flextp {

Balancer::Balancer(Communicator& comm, Partition initial, UnitCosts costs, CommCostModel comm_model,
                   BalanceOptions o)
    : comm_(comm),
      partition_(std::move(initial)),
      costs_(std::move(costs)),
      comm_model_(std::move(comm_model)),
      o_(std::move(o)),
      monitor_(comm.size(), o_.window),
      resizer_(o_.resize) {
  FLEXTP_CHECK(o_.policy == "none" || o_.policy == "migrate" || o_.policy == "resize", "--balance '", o_.policy,
               "' is not one of none, migrate, resize");
}

void Balancer::observe_gradients(const std::vector<Parameter*>& params, int64_t step) {
  if (o_.policy == "resize") resizer_.observe(params, step);
}

std::vector<double> Balancer::units_per_kind(int rank) const {
  std::vector<double> count(3, 0.0);
  for (const auto& [group, owners] : partition_.groups()) {
    size_t kind = group.size() >= 4 && group.compare(group.size() - 4, 4, "head") == 0 ? 0
                  : group.size() >= 3 && group.compare(group.size() - 3, 3, "mlp") == 0 ? 1
                                                                                         : 2;
    for (int o : owners) count[kind] += o == rank;
  }
  count.push_back(rank == comm_.rank() ? static_cast<double>(skipped_) : 0.0);
  return count;
}

double Balancer::work_of(int rank) const {
  return rank_work(partition_, costs_)[rank] - (rank == comm_.rank() ? skipped_work_ : 0.0);
}

BalanceStep Balancer::after_step(double compute_ms, double wait_ms, const std::vector<Parameter*>& params,
                                 const std::vector<std::string>& slots) {
  BalanceStep out;
  monitor_.record(comm_, compute_ms, wait_ms, work_of(comm_.rank()), units_per_kind(comm_.rank()));
  ++since_move_;
  std::vector<double> speed = monitor_.speeds();
  out.plan.target = partition_;
  out.plan.now_ms = predicted_step_ms(partition_, speed, costs_);
  out.plan.ideal_ms = ideal_step_ms(partition_, speed, costs_);
  out.plan.after_ms = out.plan.now_ms;
  if (o_.policy == "resize" && comm_.size() > 1) {
    // Resizing reacts at once and moves nothing: every rank sets its own active units.
    skipped_ = resizer_.apply(params, partition_, speed, comm_.rank());
    skipped_work_ = 0;
    for (const auto& [group, owners] : partition_.groups()) {
      std::vector<Parameter*> ps = group_parameters(params, group);
      if (ps.empty()) continue;
      double unit = costs_.work.count(group) ? costs_.work.at(group) : 0.0;
      skipped_work_ += unit * static_cast<double>(ps.front()->units.size() - active_units(ps));
    }
    return out;
  }
  if (o_.policy != "migrate" || comm_.size() == 1 || since_move_ < o_.settle_steps) return out;
  out.plan = plan_migration(partition_, speed, costs_, comm_model_, o_.planner);
  if (!out.plan.migrate) return out;
  auto start = std::chrono::steady_clock::now();
  out.moved = repartition(params, partition_, out.plan.target, slots, &comm_, comm_model_.transfer);
  out.migrate_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  partition_ = out.plan.target;
  since_move_ = 0;
  return out;
}

}  // namespace flextp
