// On a GPU the step clock's compute runs behind the host on one stream, and NCCL's all-reduces
// queue on that stream too: what the stream spends inside a started all-reduce (waiting for the
// other replicas) must count as waiting, not compute, the emulated straggler must stretch
// compute alone (parallel/balance/step_clock.h), and such an all-reduce, which runs in the
// compute's place, must not say that it ran beside it (no overlap for GradientSync to count).
// Checked on the CPU with a fake device (a stream and a clock the test drives) and, on a GPU,
// with the real stream.
#include <doctest/doctest.h>

#include <vector>

#include "core/ops/matmul.h"
#include "parallel/balance/step_clock.h"
#include "tests/gpu_skip.h"

using namespace flextp;

namespace {

// A device whose stream runs its queue, in order, behind a host clock the test advances.
struct FakeDevice {
  double now = 0;         // the host's clock, ms
  double busy_until = 0;  // when the stream's queue will have run
  void queue(double ms) { busy_until = std::max(busy_until, now) + ms; }
};

class FakeStream : public ComputeStream {
 public:
  explicit FakeStream(FakeDevice& d) : d_(d) {}
  void synchronize() override { d_.now = std::max(d_.now, d_.busy_until); }
  int64_t timed(const std::function<void()>& enqueue) override {
    const double before = std::max(d_.busy_until, d_.now);
    enqueue();
    spans_.push_back(std::max(d_.busy_until, d_.now) - before);
    return static_cast<int64_t>(spans_.size()) - 1;
  }
  double take_ms(int64_t id) override { return spans_.at(static_cast<size_t>(id)); }

 private:
  FakeDevice& d_;
  std::vector<double> spans_;
};

// One rank of a data-parallel group whose started all-reduce holds the stream `held_ms`: the
// time NCCL's kernel waits there for the slower replicas.
class StreamComm : public Communicator {
 public:
  StreamComm(FakeDevice& d, double held_ms) : d_(d), held_(held_ms) {}
  int rank() const override { return 0; }
  int size() const override { return 2; }
  const char* backend() const override { return "fake-stream"; }
  void all_reduce(Tensor&, ReduceOp) override {}
  std::unique_ptr<PendingReduce> start_all_reduce(Tensor&, ReduceOp) override {
    d_.queue(held_);
    return finished_reduce();  // queued in the compute's place: not beside it
  }
  void broadcast(Tensor&, int) override {}
  void all_gather(const Tensor&, Tensor&) override {}
  void reduce_scatter(const Tensor&, Tensor&) override {}
  void send_recv(const std::vector<Transfer>&, const std::vector<Transfer>&) override {}
  void all_to_all_v(const Tensor&, const std::vector<int64_t>&, Tensor&, const std::vector<int64_t>&) override {}
  void barrier() override {}

 private:
  FakeDevice& d_;
  double held_;
};

// A step: 4 ms of kernels, an all-reduce started (the stream then waits 10 ms in it), 3 ms more
// kernels queued behind it, the all-reduce's wait, the step's end. `dp`: the all-reduce is that
// group's (a data-parallel bucket, StepClock::start_timed), else the clock's own group's.
void run_step(StepClock& clock, FakeDevice& d, Communicator* dp = nullptr) {
  clock.begin_step(0);
  d.queue(4);
  Tensor t = Tensor::zeros({4});
  std::unique_ptr<PendingReduce> sum = dp ? clock.start_timed(*dp, t, ReduceOp::Sum) : clock.start_all_reduce(t, ReduceOp::Sum);
  d.queue(3);
  d.now += 0.5;  // the host's own work, done while the stream runs
  if (dp)
    clock.timed([&] { sum->wait(); });  // as GradientSync waits for a bucket
  else
    sum->wait();
  clock.end_segment();
}

// The clock reads the fake device's host clock and stream.
void on_fake_device(StepClock& clock, FakeDevice& d) {
  clock.set_compute_stream(std::make_unique<FakeStream>(d));
  clock.set_time([&d] { return d.now; }, [&d](double ms) { d.now += ms; });
}

// A data-parallel rank whose started all-reduce the host progresses beside the stream (MPI's):
// it ends `ms` after its start whatever the stream does, and queues nothing there.
class HostComm : public StreamComm {
 public:
  HostComm(FakeDevice& d, double ms) : StreamComm(d, 0), d_(d), ms_(ms) {}
  std::unique_ptr<PendingReduce> start_all_reduce(Tensor&, ReduceOp) override {
    struct OnHost : PendingReduce {
      FakeDevice& d;
      double done_at;
      OnHost(FakeDevice& dev, double at) : d(dev), done_at(at) {}
      bool test() override { return d.now >= done_at; }
      void wait() override { d.now = std::max(d.now, done_at); }
      bool beside_compute() const override { return true; }
    };
    return std::make_unique<OnHost>(d_, d_.now + ms_);
  }

 private:
  FakeDevice& d_;
  double ms_;
};

}  // namespace

TEST_CASE("the step clock counts the time a started all-reduce holds the device stream as waiting, not compute") {
  FakeDevice d;
  StreamComm comm(d, 10);
  StepClock clock(comm, SlowdownSchedule{});
  on_fake_device(clock, d);
  run_step(clock, d);
  CHECK(d.now == doctest::Approx(17));
  CHECK(clock.compute_ms() == doctest::Approx(7));
  CHECK(clock.wait_ms() == doctest::Approx(10));
}

TEST_CASE("a data-parallel bucket started through the step clock: its time on the device stream is waiting too") {
  FakeDevice d;
  StreamComm dp(d, 10), group(d, 0);
  StepClock clock(group, SlowdownSchedule{});
  on_fake_device(clock, d);
  run_step(clock, d, &dp);
  CHECK(clock.compute_ms() == doctest::Approx(7));
  // The wait timed twice over (the bucket's and GradientSync's) is one wait, not 20 ms.
  CHECK(clock.wait_ms() == doctest::Approx(10));
}

TEST_CASE("a bucket queued on the device stream runs in the compute's place, one progressed by the host beside it") {
  // The same 10 ms all-reduce of a data-parallel bucket, started between 4 and 3 ms of kernels
  // (run_step). Returns whether the bucket said it ran beside the compute.
  auto step = [](FakeDevice& d, Communicator& dp, StepClock& clock) {
    on_fake_device(clock, d);
    clock.begin_step(0);
    d.queue(4);
    Tensor t = Tensor::zeros({4});
    std::unique_ptr<PendingReduce> sum = clock.start_timed(dp, t, ReduceOp::Sum);
    d.queue(3);
    clock.timed([&] { sum->wait(); });
    clock.end_segment();
    return sum->beside_compute();
  };
  // Queued on the stream (NCCL's): the later kernels wait for it, the step takes 17 ms, and the
  // bucket says it did not run beside the compute (GradientSync then counts no overlap).
  FakeDevice queued;
  StreamComm on_stream(queued, 10), group(queued, 0);
  StepClock clock(group, SlowdownSchedule{});
  CHECK_FALSE(step(queued, on_stream, clock));
  CHECK(queued.now == doctest::Approx(17));
  CHECK(clock.compute_ms() == doctest::Approx(7));
  CHECK(clock.wait_ms() == doctest::Approx(10));
  // Progressed by the host (MPI's): 7 of its 10 ms pass while the kernels run, the step takes
  // 10 ms, and the bucket says it ran beside the compute.
  FakeDevice beside;
  HostComm on_host(beside, 10);
  StreamComm host_group(beside, 0);
  StepClock host_clock(host_group, SlowdownSchedule{});
  CHECK(step(beside, on_host, host_clock));
  CHECK(beside.now == doctest::Approx(10));
  CHECK(host_clock.compute_ms() == doctest::Approx(7));
  CHECK(host_clock.wait_ms() == doctest::Approx(3));
}

TEST_CASE("the emulated straggler stretches the compute on a device stream, not the waits inside it") {
  FakeDevice d;
  StreamComm comm(d, 10);
  StepClock clock(comm, SlowdownSchedule({parse_straggler("0:2:0")}, 2));
  on_fake_device(clock, d);
  run_step(clock, d);
  CHECK(clock.factor() == 2.0);
  CHECK(clock.compute_ms() == doctest::Approx(14));  // 4 + 3 ms of kernels, twice as slow
  CHECK(clock.wait_ms() == doctest::Approx(10));
}

TEST_CASE("on the GPU, the step clock counts the time a started all-reduce holds the compute stream as waiting") {
  if (test::skip_without_gpu()) return;
  // An all-reduce whose kernel keeps the stream busy (as NCCL's waits for slower replicas): here
  // large matmuls queued by start_all_reduce, while the step computes next to nothing.
  struct BusyComm : StreamComm {
    FakeDevice unused;
    BusyComm() : StreamComm(unused, 0) {}
    std::unique_ptr<PendingReduce> start_all_reduce(Tensor&, ReduceOp) override {
      Tensor a = Tensor::full({2048, 2048}, 1.0 / 2048, DType::F32, Device::cuda(0));
      Tensor b = Tensor::full({2048, 2048}, 1.0 / 2048, DType::F32, Device::cuda(0));
      for (int i = 0; i < 20; ++i) a = matmul(a, b);
      return finished_reduce();
    }
  } comm;
  StepClock clock(comm, SlowdownSchedule{});
  clock.set_sync_gpu(true);
  clock.begin_step(0);
  Tensor t = Tensor::zeros({4}, DType::F32, Device::cuda(0));
  std::unique_ptr<PendingReduce> sum = clock.start_all_reduce(t, ReduceOp::Sum);
  sum->wait();
  clock.end_segment();
  // Relative, not a timing bound: the matmuls' stream time is waiting, the step's own host work
  // (a launch or two) is all its compute.
  CHECK(clock.wait_ms() > 0);
  CHECK(clock.wait_ms() > 4 * clock.compute_ms());
}

TEST_CASE("the step clock counts a started all-reduce's wait as waiting and the compute around it as compute") {
  std::unique_ptr<Communicator> single = make_single_process_communicator();
  StepClock clock(*single, SlowdownSchedule{});
  double now = 0;
  clock.set_time([&] { return now; }, [&](double ms) { now += ms; });
  clock.begin_step(0);
  Tensor t = Tensor::ones({4});
  now += 3;  // compute before the start
  std::unique_ptr<PendingReduce> p = clock.start_all_reduce(t, ReduceOp::Sum);
  now += 4;  // compute between the start and the wait
  p->wait();
  now += 2;  // and after it
  clock.end_segment();
  CHECK(clock.compute_ms() == doctest::Approx(9));
  CHECK(clock.wait_ms() == doctest::Approx(0));
  CHECK(t.to_vector<float>() == std::vector<float>{1, 1, 1, 1});
}
