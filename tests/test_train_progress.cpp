// What train says of its progress, on a clock the test moves (no wall time): the step out of the
// total, the time left, the MFU of a logged step and the summary's mean MFU; and end to end, that
// rank 0 alone says it under mpirun, in plain lines.
#include <doctest/doctest.h>

#include "tests/run_command.h"
#include "tests/temp_dir.h"
#include "train/progress.h"

using namespace flextp;

namespace {

// 1e5 model FLOPs per token against a peak of 10 GFLOP/s: 1000 tokens in 0.1 s are 10%.
MfuBasis basis(double peak_flops_per_s = 1e10) {
  MfuBasis b;
  b.flops_per_token = 1e5;
  b.peak.flops_per_s = peak_flops_per_s;
  return b;
}

}  // namespace

TEST_CASE("a logged step's line ends with its MFU, the step out of the total and the time left on the wall clock") {
  double now = 100;
  Progress p(10, 1000, [&] { return now; });
  p.start(0, basis());
  now = 115, p.step(1, 100);
  now = 130, p.step(2, 100);
  // 15 s a step on the wall clock (evaluations and saves included, not only the steps' 100 ms)
  // and 8 steps to go.
  CHECK(p.suffix() == " | MFU 10.0% | 2 of 10 steps, 2m00s left");
  now = 133, p.step(3, 400);  // a slower step: its own MFU
  CHECK(p.suffix() == " | MFU 2.5% | 3 of 10 steps, 1m17s left");

  Progress hours(1000, 1000, [&] { return now; });
  hours.start(0, basis(0));  // a peak nobody knows: no MFU
  now += 30, hours.step(1, 100), hours.step(2, 100);
  CHECK(hours.suffix() == " | 2 of 1000 steps, 4h09m left");
}

TEST_CASE("a resumed run's time left counts only its own steps") {
  double now = 0;
  Progress p(10, 1000, [&] { return now; });
  p.start(6, basis());  // the checkpoint's 6 steps took no time of this run
  now = 20, p.step(7, 200);
  CHECK(p.suffix() == " | MFU 5.0% | 7 of 10 steps, 1m00s left");
  now = 25, p.step(8, 200);
  CHECK(p.suffix() == " | MFU 5.0% | 8 of 10 steps, 25.0s left");
}

TEST_CASE("the summary gives the wall time, the steps' time and the mean MFU over the steps' time") {
  double now = 0;
  Progress p(2, 1000, [&] { return now; });
  p.start(0, basis());
  CHECK(p.summary() == "");  // no step, nothing to sum up
  now = 20, p.step(1, 100);
  now = 45, p.step(2, 300);
  // 2000 tokens in 0.4 s of steps: 5000 tok/s, 5% (not 6.7%, the mean of the steps' 10% and 3.3%).
  CHECK(p.summary() == "done: 2 steps in 45.0s; 0.4s in the steps at 5000 tok/s, mean MFU 5.0%");
  now = 3725;
  CHECK(p.summary().find("done: 2 steps in 1h02m; ") == 0);
}

TEST_CASE("under mpirun rank 0 alone gives the progress at the log interval and the summary") {
  test::TempDir dir("progress");
  test::Run r = test::run_train_on(2, 2, "--n-layer 1 --n-head 2 --n-embd 16 --mlp-unit 16 --seq-len 16 --batch 2 "
                                         "--eval-every 0 --eval-batches 2 --warmup 2 --steps 4 --log-every 2 --data " +
                                             test::corpus(dir));
  REQUIRE_MESSAGE(r.status == 0, r.output);
  auto count = [&](const std::string& text) {
    size_t n = 0;
    for (size_t at = r.output.find(text); at != std::string::npos; at = r.output.find(text, at + 1)) ++n;
    return n;
  };
  CHECK(count("MFU of ") == 1);  // what it is measured against, said once
  CHECK(count(" | 1 of 4 steps, ") == 1);
  CHECK(count(" | 3 of 4 steps, ") == 1);
  CHECK(count(" | 4 of 4 steps, ") == 1);
  CHECK(count(" | 2 of 4 steps, ") == 0);  // not a logged step
  CHECK(count("| MFU ") == 3);
  CHECK(count("done: 4 steps in ") == 1);
  CHECK(count(", mean MFU ") == 1);
  CHECK(count("\r") == 0);  // nothing redrawn
}
