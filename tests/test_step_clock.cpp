// The step clock's split of a step into compute and waiting (parallel/balance/step_clock.h), on a
// clock the test drives: the time inside a collective is waiting, the time between collectives is
// compute, the emulated straggler stretches compute only, and a collective run inside another
// through timed() is one wait. On a GPU, the time the device spends in a collective is waiting.
#include <doctest/doctest.h>

#include "core/ops/matmul.h"
#include "parallel/balance/step_clock.h"
#include "tests/gpu_skip.h"

using namespace flextp;

namespace {

// Every collective takes `ms` of the test's clock: the time spent waiting for the other ranks.
class SlowPeers : public Communicator {
 public:
  SlowPeers(double& now, double ms) : now_(now), ms_(ms) {}
  int rank() const override { return 0; }
  int size() const override { return 2; }
  const char* backend() const override { return "slow-peers"; }
  void all_reduce(Tensor&, ReduceOp) override { now_ += ms_; }
  void broadcast(Tensor&, int) override { now_ += ms_; }
  void all_gather(const Tensor&, Tensor&) override { now_ += ms_; }
  void reduce_scatter(const Tensor&, Tensor&) override { now_ += ms_; }
  void send_recv(const std::vector<Transfer>&, const std::vector<Transfer>&) override { now_ += ms_; }
  void all_to_all_v(const Tensor&, const std::vector<int64_t>&, Tensor&, const std::vector<int64_t>&) override {
    now_ += ms_;
  }
  void barrier() override { now_ += ms_; }

 private:
  double& now_;
  double ms_;
};

// 3 ms of compute, an all-reduce (10 ms of waiting), 2 ms of compute, the step's end.
void run_step(StepClock& clock, double& now, bool nested = false) {
  clock.begin_step(0);
  Tensor t = Tensor::zeros({4});
  now += 3;
  if (nested)
    clock.timed([&] { clock.all_reduce(t, ReduceOp::Sum); });  // a caller that times its own call
  else
    clock.all_reduce(t, ReduceOp::Sum);
  now += 2;
  clock.end_segment();
}

}  // namespace

TEST_CASE("the step clock counts a collective's time as waiting and the time between as compute") {
  double now = 0;
  SlowPeers peers(now, 10);
  StepClock clock(peers, SlowdownSchedule{});
  clock.set_time([&] { return now; }, [&](double ms) { now += ms; });
  run_step(clock, now);
  CHECK(clock.compute_ms() == doctest::Approx(5));
  CHECK(clock.wait_ms() == doctest::Approx(10));
  SUBCASE("a collective inside another, through timed(), is one wait") {
    run_step(clock, now, true);
    CHECK(clock.compute_ms() == doctest::Approx(5));
    CHECK(clock.wait_ms() == doctest::Approx(10));
  }
}

TEST_CASE("the emulated straggler stretches the compute segments, not the waits") {
  double now = 0;
  SlowPeers peers(now, 10);
  StepClock clock(peers, SlowdownSchedule({parse_straggler("0:2")}, 2));
  clock.set_time([&] { return now; }, [&](double ms) { now += ms; });
  run_step(clock, now);
  CHECK(clock.factor() == 2.0);
  CHECK(clock.compute_ms() == doctest::Approx(10));  // 3 + 2 ms, twice as slow
  CHECK(clock.wait_ms() == doctest::Approx(10));
  CHECK(now == doctest::Approx(20));
}

TEST_CASE("on the GPU, the time the device spends in a collective counts as waiting") {
  if (test::skip_without_gpu()) return;
  // A collective whose device work (here large matmuls) keeps the stream busy, and that returns
  // once the stream has run it, as the NCCL communicator's calls do; the step itself computes
  // next to nothing.
  struct BusyDevice : SlowPeers {
    double unused = 0;
    BusyDevice() : SlowPeers(unused, 0) {}
    void all_reduce(Tensor&, ReduceOp) override {
      Tensor a = Tensor::full({2048, 2048}, 1.0 / 2048, DType::F32, Device::cuda(0));
      Tensor b = Tensor::full({2048, 2048}, 1.0 / 2048, DType::F32, Device::cuda(0));
      for (int i = 0; i < 20; ++i) a = matmul(a, b);
      a.to(Device::cpu());  // waits for the stream
    }
  } device;
  StepClock clock(device, SlowdownSchedule{});
  clock.set_sync_gpu(true);
  clock.begin_step(0);
  Tensor t = Tensor::zeros({4}, DType::F32, Device::cuda(0));
  clock.all_reduce(t, ReduceOp::Sum);
  clock.end_segment();
  // Relative, not a timing bound: the matmuls are waiting, the step's own host work its compute.
  CHECK(clock.wait_ms() > 0);
  CHECK(clock.wait_ms() > 4 * clock.compute_ms());
}
