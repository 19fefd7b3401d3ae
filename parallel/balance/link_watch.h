#pragma once
// A slow link is not a slow rank. The step's communication time is the least wait of any rank of
// the group: the slowest rank waits for nobody, so what it spends inside collectives is the
// transfers' own time; a slow rank makes the others wait but leaves that least wait alone, and a
// slow link raises it for everyone while every rank's compute stays as it was (so the balancer,
// which reads compute, moves nothing for it). The watch keeps that time's usual level and says
// when it rose and stayed up (two steps in a row above it by more than `jump` times, and by more
// than `floor_ms` and a tenth of the step: a link slowed) and when it came back (two steps in a
// row within that: recovered). Jitter of a few ms on a busy machine (up to 10 ms seen on 2 shared
// cores: the scheduler's ticks) is not a slow link.
#include <cstdint>

namespace flextp {

class LinkWatch {
 public:
  enum class Event { None, Slowed, Recovered };
  // window: the usual level's average span in steps; jump: the relative rise that counts; floor_ms:
  // an absolute rise below which no change counts.
  explicit LinkWatch(int window = 10, double jump = 1.0, double floor_ms = 10.0);
  // This step's communication time and the rest of the step (step_ms_of); what changed with it.
  Event record(double comm_ms, double rest_ms = 0);
  bool slow() const { return slow_; }
  double usual_ms() const { return usual_; }  // the level before a slowdown (frozen while slow)
  int64_t since_step() const { return since_; }  // the sample that started the current state

 private:
  bool high(double ms, double rest_ms) const;
  double alpha_, jump_, floor_ms_, usual_ = 0;
  bool slow_ = false;
  int run_ = 0;  // samples in a row that disagree with the current state
  int64_t samples_ = 0, since_ = 0;
};

}  // namespace flextp
