#include "parallel/balance/step_clock.h"

#include <chrono>
#include <thread>

#include "core/cuda/cuda_runtime_api.h"
#include "core/timer.h"

namespace flextp {

StepClock::StepClock(Communicator& inner, SlowdownSchedule schedule)
    : inner_(inner), schedule_(std::move(schedule)), segment_start_(now_ms()) {}

void StepClock::set_time(std::function<double()> now, std::function<void(double)> sleep_ms) {
  now_ms_ = std::move(now), sleep_ms_ = std::move(sleep_ms);
  segment_start_ = this->now();
}

double StepClock::now() const { return now_ms_ ? now_ms_() : now_ms(); }

void StepClock::begin_step(int64_t step) {
  factor_ = schedule_.factor(inner_.rank(), step);
  compute_ms_ = wait_ms_ = 0;
  segment_start_ = now();
}

void StepClock::end_segment() {
  // GPU kernels run behind the host: the segment's compute ends when they have finished.
  if (sync_gpu_) cuda::synchronize();
  double worked = now() - segment_start_;
  if (factor_ > 1.0 && worked > 0) {  // the emulated straggler computes slower; it waits as long
    const double extra = (factor_ - 1.0) * worked;
    if (sleep_ms_)
      sleep_ms_(extra);
    else
      std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(extra));
  }
  double end = now();
  compute_ms_ += end - segment_start_;
  segment_start_ = end;
}

template <typename F>
void StepClock::collective(F&& f) {
  // Inside another (a collective run through timed() that calls this clock): that one counts it,
  // as one wait, and no empty compute segment comes between.
  if (in_collective_) {
    f();
    return;
  }
  struct Inside {
    bool& flag;
    ~Inside() { flag = false; }
  } inside{in_collective_ = true};
  end_segment();
  f();
  double end = now();
  wait_ms_ += end - segment_start_;
  segment_start_ = end;
}

void StepClock::timed(const std::function<void()>& collective_call) { collective(collective_call); }

void StepClock::all_reduce(Tensor& t, ReduceOp op) {
  collective([&] {
    if (op == ReduceOp::Sum)
      reduce_by(inner_, t, reduce_);
    else
      inner_.all_reduce(t, op);
  });
}
void StepClock::broadcast(Tensor& t, int root) { collective([&] { inner_.broadcast(t, root); }); }
void StepClock::all_gather(const Tensor& in, Tensor& out) { collective([&] { inner_.all_gather(in, out); }); }
void StepClock::reduce_scatter(const Tensor& in, Tensor& out) {
  collective([&] { inner_.reduce_scatter(in, out); });
}
void StepClock::send_recv(const std::vector<Transfer>& sends, const std::vector<Transfer>& recvs) {
  collective([&] { inner_.send_recv(sends, recvs); });
}
void StepClock::all_to_all_v(const Tensor& send, const std::vector<int64_t>& send_bytes, Tensor& recv,
                             const std::vector<int64_t>& recv_bytes) {
  collective([&] { inner_.all_to_all_v(send, send_bytes, recv, recv_bytes); });
}
void StepClock::barrier() { collective([&] { inner_.barrier(); }); }

}  // namespace flextp
