#include "trainer.h"

#include <algorithm>

#include "bench/timer.h"
#include "optim/clip.h"

namespace flextp {

Trainer::Trainer(const TrainOptions& o, GPT& model, Optimizer& opt, StepClock& clock, Balancer& balancer,
                 Watchdog& watchdog, BatchSampler sampler, FaultHook faults, std::function<void(const StepReport&)> on_skip)
    : o_(o), model_(model), params_(model.parameters()), opt_(opt), clock_(clock), balancer_(balancer),
      watchdog_(watchdog), faults_(std::move(faults)), sampler_(std::move(sampler)),
      schedule_{o.lr, o.min_lr, o.warmup, o.steps}, on_skip_(std::move(on_skip)) {}

StepReport Trainer::step(int64_t step) {
  double t0 = bench::now_ms();
  clock_.begin_step(step);
  model_.set_step(static_cast<uint64_t>(step));
  watchdog_.beat(step + 1);
  StepReport r;
  r.step = step + 1, r.last = r.step == o_.steps, r.lr = schedule_.at(step);
  Batch b = sampler_.at_step(step);
  Tensor loss = model_.loss(b.ids, b.targets);
  r.loss = faults_.after_forward(r.step, loss.item());
  // Every rank sees the same loss and norm (both are reduced), so all skip a bad step together.
  if (std::isfinite(r.loss)) {
    loss.backward();
    r.grad_norm = clip_grad_norm(params_, o_.grad_clip, &clock_);
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
  FLEXTP_CHECK(bad_in_row_ < o_.max_bad_steps, "stopping at step ", r.step, ": ", bad_in_row_,
               " steps in a row had a non-finite loss or gradient (--max-bad-steps ", o_.max_bad_steps,
               "); lower --lr or raise --grad-clip. The last good checkpoint is untouched",
               o_.save.empty() ? std::string(" (none was saved: no --save)") : ": see --save " + o_.save + " and its -step files");
  clock_.end_segment();
  r.balance = balancer_.after_step(clock_.compute_ms(), clock_.wait_ms(), params_, opt_.slot_names());
  r.ms = bench::now_ms() - t0;
  r.tokens_per_s = static_cast<double>(o_.batch * o_.seq_len) / (r.ms / 1000.0);
  if (clock_.size() > 1) {
    r.ranks = balancer_.monitor().table();
    if (r.balance.plan.migrate) r.partition_text = balancer_.partition().str();
  }
  return r;
}

}  // namespace flextp
