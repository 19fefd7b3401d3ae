#include "parallel/balance/step_clock.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <thread>

#include "core/cuda/cuda_runtime_api.h"
#include "core/timer.h"

namespace flextp {
namespace {

// The GPU's compute stream: a CUDA event on each side of the work timed.
class GpuComputeStream : public ComputeStream {
 public:
  ~GpuComputeStream() override {
    for (auto& [id, marks] : marks_) cuda::release_mark(marks.first), cuda::release_mark(marks.second);
  }
  void synchronize() override { cuda::synchronize(); }
  int64_t timed(const std::function<void()>& enqueue) override {
    void* before = cuda::record_mark();
    enqueue();
    marks_[next_] = {before, cuda::record_mark()};
    return next_++;
  }
  double take_ms(int64_t id) override {
    auto [before, after] = marks_.at(id);
    marks_.erase(id);
    double ms = cuda::mark_ms(before, after);
    cuda::release_mark(before), cuda::release_mark(after);
    return ms;
  }

 private:
  std::map<int64_t, std::pair<void*, void*>> marks_;
  int64_t next_ = 0;
};

}  // namespace

std::unique_ptr<ComputeStream> gpu_compute_stream() { return std::make_unique<GpuComputeStream>(); }

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

class StepClock::TimedReduce : public PendingReduce {
 public:
  TimedReduce(StepClock& clock, std::unique_ptr<PendingReduce> inner, int64_t stream_id)
      : clock_(clock), inner_(std::move(inner)), stream_id_(stream_id) {
    if (stream_id_ >= 0) clock_.on_stream_.push_back(this);
  }
  ~TimedReduce() override {
    auto& pending = clock_.on_stream_;
    if (std::find(pending.begin(), pending.end(), this) == pending.end()) return;
    pending.erase(std::find(pending.begin(), pending.end(), this));
    clock_.stream_->synchronize();  // its marks are freed once passed
    clock_.stream_->take_ms(stream_id_);
  }
  bool test() override { return inner_->test(); }
  bool beside_compute() const override { return inner_->beside_compute(); }
  // It waited here (and, on a device stream, in the time the stream spent inside it, which
  // end_segment counted).
  void wait() override { clock_.collective([&] { inner_->wait(); }); }
  // The segment that ended after it ran on the stream: its stream time, counted as waiting.
  double count_stream_time() { return clock_.stream_->take_ms(stream_id_); }

 private:
  StepClock& clock_;
  std::unique_ptr<PendingReduce> inner_;
  int64_t stream_id_;
};

void StepClock::end_segment() {
  // GPU kernels run behind the host: the segment's compute ends when they have finished. The
  // all-reduces started in it ran on the same stream, in between: that time was spent waiting.
  double held = 0;
  if (stream_) {
    stream_->synchronize();
    for (TimedReduce* r : on_stream_) held += r->count_stream_time();
    on_stream_.clear();
  }
  double worked = std::max(0.0, now() - segment_start_ - held);
  if (factor_ > 1.0 && worked > 0) {  // the emulated straggler computes slower; it waits as long
    const double extra = (factor_ - 1.0) * worked;
    if (sleep_ms_)
      sleep_ms_(extra);
    else
      std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(extra));
  }
  double end = now();
  const double computed = std::max(0.0, end - segment_start_ - held);
  compute_ms_ += computed;
  wait_ms_ += end - segment_start_ - computed;
  segment_start_ = end;
}

template <typename F>
void StepClock::collective(F&& f) {
  // Inside another (the wait of a data-parallel bucket, which GradientSync times too): that one
  // counts it, as one wait, and no empty compute segment comes between.
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
std::unique_ptr<PendingReduce> StepClock::start_all_reduce(Tensor& t, ReduceOp op) {
  if (op == ReduceOp::Sum && reduce_ != ReduceMethod::AllReduce) {
    all_reduce(t, op);
    return finished_reduce();
  }
  std::unique_ptr<PendingReduce> inner;
  int64_t on_stream = -1;
  collective([&] {
    if (stream_)
      on_stream = stream_->timed([&] { inner = inner_.start_all_reduce(t, op); });
    else
      inner = inner_.start_all_reduce(t, op);
  });
  return std::make_unique<TimedReduce>(*this, std::move(inner), on_stream);
}

std::unique_ptr<PendingReduce> StepClock::start_timed(Communicator& other, Tensor& t, ReduceOp op) {
  // No segment ends here: the backward's hooks start these between its kernels, and ending a
  // segment would stop the host for the kernels queued so far (a GPU sync per bucket). The
  // stream time is read when the segment ends, at the wait or the next collective.
  std::unique_ptr<PendingReduce> inner;
  int64_t on_stream = -1;
  if (stream_)
    on_stream = stream_->timed([&] { inner = other.start_all_reduce(t, op); });
  else
    inner = other.start_all_reduce(t, op);
  return std::make_unique<TimedReduce>(*this, std::move(inner), on_stream);
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
