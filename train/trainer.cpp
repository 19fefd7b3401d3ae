#include "train/trainer.h"

#include <algorithm>

#include "core/timer.h"
#include "optim/clip.h"
#include "parallel/comm/gather_rows.h"
#include "parallel/dp/micro_batches.h"
#include "train/step_exchange.h"

namespace flextp {

Trainer::Trainer(StepSettings settings, GPT& model, Optimizer& opt, StepClock& clock, Balancer& balancer,
                 Watchdog& watchdog, BatchSampler sampler, FaultHook faults,
                 std::function<void(const StepReport&)> on_skip, Replicas replicas)
    : settings_(std::move(settings)), model_(model), params_(model.parameters()), opt_(opt), clock_(clock),
      balancer_(balancer), watchdog_(watchdog), faults_(std::move(faults)), sampler_(std::move(sampler)),
      on_skip_(std::move(on_skip)), replicas_(replicas),
      shares_(replicas.grid, settings_.batch, settings_.micro_batch, settings_.speed_shares, settings_.monitor_window) {
  FLEXTP_CHECK(replicas_.grid.dp == (replicas_.comm ? replicas_.comm->size() : 1), "a grid of ", replicas_.grid.dp,
               " replicas needs a data-parallel group of as many ranks");
  if (several_replicas()) {
    FLEXTP_CHECK(replicas_.world, "a grid of ", replicas_.grid.dp, " replicas needs the world's communicator");
    sync_ = std::make_unique<GradientSync>(*replicas_.comm, *replicas_.world, replicas_.grid, balancer_.partition(),
                                           replicas_.bucket_bytes,
                                           [this](const std::function<void()>& f) { clock_.timed(f); });
  }
}

double Trainer::over_replicas(double local, ReduceOp op) {
  if (!several_replicas()) return local;
  Tensor t = Tensor::from_vector<double>({local}, {1});
  clock_.timed([&] { replicas_.comm->all_reduce(t, op); });
  return t.item();
}

Trainer::Bookkeeping Trainer::exchange_bookkeeping(const GradSquares& squares, const std::vector<MetricShares>& shares,
                                                  int stop_request) {
  Bookkeeping out;
  std::vector<std::vector<double>> rows;
  // Timed, as any collective of the step: waiting here for a slower rank is waiting.
  clock_.timed([&] {
    // The clock has just closed its compute segment: its counters hold the step up to here.
    out.compute_ms = clock_.compute_ms(), out.wait_ms = clock_.wait_ms();
    StepExchange mine;
    mine.report = balancer_.report(out.compute_ms + tail_.compute_ms, out.wait_ms + tail_.wait_ms);
    mine.squares = squares;
    mine.stop_request = stop_request;
    mine.metrics = shares;
    rows = all_gather_rows(clock_.untimed(), mine.to_wire());
  });
  std::vector<GradSquares> ranks;
  std::vector<std::vector<MetricShares>> rank_shares;
  for (const std::vector<double>& row : rows) {
    StepExchange theirs = StepExchange::from_wire(row);
    out.stop = std::max(out.stop, theirs.stop_request);
    ranks.push_back(theirs.squares);
    rank_shares.push_back(theirs.metrics);
    out.reports.push_back(theirs.report);
  }
  out.norm = norm_of(ranks);
  out.metrics = metric_values(rank_shares);
  return out;
}

void Trainer::update(StepReport& r, int64_t step, double norm) {
  if (std::isfinite(r.loss)) {
    r.grad_norm = sync_ ? sync_->same_on_every_replica(norm) : norm;
    clip_to_norm(params_, settings_.grad_clip, r.grad_norm);
  }
  r.skipped = !std::isfinite(r.grad_norm);
  if (!r.skipped) {
    balancer_.observe_gradients(params_, step);
    opt_.step(params_, r.lr);
    bad_in_row_ = 0;
  } else {
    ++bad_in_row_, ++bad_total_;
  }
  r.bad_in_row = bad_in_row_, r.bad_total = bad_total_;
  if (r.skipped) on_skip_(r);
  for (Parameter* p : params_) p->value.zero_grad();
  FLEXTP_CHECK(bad_in_row_ < settings_.max_bad_steps, "stopping at step ", r.step, ": ", bad_in_row_,
               " steps in a row had a non-finite loss or gradient (--max-bad-steps ", settings_.max_bad_steps,
               "); lower --lr or raise --grad-clip. The last good checkpoint is untouched",
               settings_.save.empty() ? std::string(" (none was saved: --no-save)")
                                      : ": see --save " + settings_.save + " and its -step files");
}

StepReport Trainer::step(int64_t step, const std::function<int()>& stop_request) {
  double t0 = now_ms();
  clock_.begin_step(step);
  model_.set_step(static_cast<uint64_t>(step));
  watchdog_.beat(step + 1);
  StepReport r;
  r.step = step + 1, r.last = r.step == settings_.steps, r.lr = settings_.schedule.at(step);
  r.grid = replicas_.grid;
  // Not a structured binding: the lambda below captures `first` (clang refuses captured bindings).
  const std::pair<int64_t, int64_t> windows = shares_.windows();
  const int64_t first = windows.first;
  Batch b = sampler_.at_step(step, first, windows.second);
  // The mean over the step's windows: each micro-step's loss is scaled by its share of them, and
  // the replicas' parts are summed (the gradients in sync_->sum below).
  // Dropout draws the masks of the whole batch, window by window: a micro-step or a replica's
  // share drops what one process running the whole batch drops in the same windows, whatever
  // the grid (so a run may resume on another grid and continue the same curve).
  double mine = accumulate_gradients(
      b, settings_.micro_batch, settings_.batch,
      [&](const Tensor& ids, const Tensor& targets, int64_t at) {
        uint64_t window = static_cast<uint64_t>(first + at);
        model_.set_step(static_cast<uint64_t>(step), window);
        return model_.loss(ids, targets);
      });
  r.loss = faults_.after_forward(r.step, over_replicas(mine, ReduceOp::Sum));
  const int stop = static_cast<int>(over_replicas(stop_request(), ReduceOp::Max));
  const double windows_ms = clock_.compute_ms();  // the forward and backward of this replica's windows
  // Every rank sees the same loss and norm (both are reduced), so all skip a bad step together.
  // After the data-parallel sum every replica holds the whole gradient, so clipping's norm,
  // summed over the tensor-parallel group, is the global one.
  GradSquares squares{NAN, NAN};
  if (std::isfinite(r.loss)) {
    if (sync_) {
      sync_->sum(params_, balancer_.partition());
      r.dp_sync = sync_->stats();
    }
    squares = grad_squares(params_);
  }
  const Bookkeeping kept = exchange_bookkeeping(squares, metric_shares(model_, params_, std::isfinite(r.loss)), stop);
  r.stop_signal = kept.stop, r.metrics = kept.metrics;
  update(r, step, kept.norm);
  clock_.end_segment();
  // What the clock counted after the exchange goes on the next step's row.
  tail_ = {clock_.compute_ms() - kept.compute_ms, clock_.wait_ms() - kept.wait_ms};
  // Each replica balances its own group from its own group's table: a slow rank moves (or skips)
  // units in its replica only. The gradient sum learns the other replicas' partitions when they
  // change (parallel/dp/gradient_sync.h); waiting there for a slower replica counts as waiting.
  r.balance = balancer_.after_step(r.step, kept.reports, params_, opt_.slot_names());
  if (several_replicas()) {  // the replicas' speeds of this step; the next step's shares
    r.replicas = shares_.after_step(clock_.untimed(), *replicas_.comm, windows_ms, windows.second,
                                    r.balance.shares, r.balance.link.comm_ms);
    balancer_.observe_replicas(shares_.view(), r.replicas.least_wait_ms, r.balance);
  }
  r.ms = now_ms() - t0;
  r.tokens_per_s = static_cast<double>(settings_.batch * settings_.seq_len) / (r.ms / 1000.0);
  if (r.balance.plan.migrate && clock_.size() > 1) r.partition_text = balancer_.partition().str();
  return r;
}

}  // namespace flextp
