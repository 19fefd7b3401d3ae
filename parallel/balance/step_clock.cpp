#include "parallel/balance/step_clock.h"

#include <chrono>
#include <ctime>
#include <thread>

#include "core/cuda/cuda_runtime_api.h"

namespace flextp {
namespace {

double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

// This thread's CPU time: inside a collective, the wall time beyond it is time descheduled.
double thread_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) * 1e-6;
}

}  // namespace

StepClock::StepClock(Communicator& inner, SlowdownSchedule schedule)
    : inner_(inner), schedule_(std::move(schedule)), segment_start_(now_ms()) {}

void StepClock::begin_step(int64_t step) {
  factor_ = schedule_.factor(inner_.rank(), step);
  compute_ms_ = wait_ms_ = 0;
  segments_.clear();
  syncs_.clear();
  segment_start_ = step_start_ = now_ms();
}

void StepClock::end_segment() {
  // GPU kernels run behind the host: the segment's compute ends when they have finished.
  if (sync_gpu_) cuda::synchronize();
  double worked = now_ms() - segment_start_;
  if (factor_ > 1.0 && worked > 0) {
    auto extra = std::chrono::duration<double, std::milli>((factor_ - 1.0) * worked);
    std::this_thread::sleep_for(extra);
  }
  double end = now_ms();
  compute_ms_ += end - segment_start_;
  segments_.push_back(end - segment_start_);
  segment_start_ = end;
}

template <typename F>
double StepClock::collective(F&& f, Sync sync, double arrival) {
  end_segment();
  const double reached = segment_start_, cpu = thread_cpu_ms();
  f();
  double end = now_ms();
  if (sync == Sync::enter)
    syncs_.add((arrival >= 0 ? arrival : segment_start_) - step_start_, end - segment_start_, thread_cpu_ms() - cpu);
  wait_ms_ += end - segment_start_;
  segment_start_ = end;
  return reached;
}

// Another group's collective: its waits count, but it is no sync point of this group, whose
// ranks may call a different number of them (data-parallel buckets follow each rank's bytes).
void StepClock::timed(const std::function<void()>& collective_call) { collective(collective_call, Sync::skip); }

void StepClock::all_reduce(Tensor& t, ReduceOp op) {
  collective([&] {
    if (op == ReduceOp::Sum)
      reduce_by(inner_, t, reduce_);
    else
      inner_.all_reduce(t, op);
  });
}
class StepClock::TimedReduce : public PendingReduce {
 public:
  TimedReduce(StepClock& clock, std::unique_ptr<PendingReduce> inner, double arrival)
      : clock_(clock), inner_(std::move(inner)), arrival_(arrival) {}
  bool test() override { return inner_->test(); }
  // One sync point per all-reduce: this rank arrived when it started it, and waited here.
  void wait() override { clock_.collective([&] { inner_->wait(); }, Sync::enter, arrival_); }

 private:
  StepClock& clock_;
  std::unique_ptr<PendingReduce> inner_;
  double arrival_;
};

std::unique_ptr<PendingReduce> StepClock::start_all_reduce(Tensor& t, ReduceOp op) {
  if (op == ReduceOp::Sum && reduce_ != ReduceMethod::AllReduce) {
    all_reduce(t, op);
    return finished_reduce();
  }
  std::unique_ptr<PendingReduce> inner;
  const double arrival = collective([&] { inner = inner_.start_all_reduce(t, op); }, Sync::skip);
  return std::make_unique<TimedReduce>(*this, std::move(inner), arrival);
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
