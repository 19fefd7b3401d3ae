#include "parallel/balance/slowdown.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>

#include "core/cuda/cuda_runtime_api.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/text_fields.h"
#include "core/timer.h"

namespace flextp {
namespace {

double to_double(const std::string& s, const std::string& what) {
  std::optional<double> v = whole_double(s);
  FLEXTP_CHECK(v, what, ": '", s, "' is not a number");
  return *v;
}

int64_t to_int(const std::string& s, const std::string& what) {
  std::optional<int64_t> v = whole_int(s);
  FLEXTP_CHECK(v, what, ": '", s, "' is not an integer");
  return *v;
}

}  // namespace

StragglerSpec parse_straggler(const std::string& spec) {
  std::string what = "straggler '" + spec + "' (RANK:FACTOR[:FROM[:TO]])";
  std::vector<std::string> f = split_fields(spec, ':');
  FLEXTP_CHECK(f.size() >= 2 && f.size() <= 4, what, ": expected 2 to 4 fields");
  StragglerSpec s;
  s.rank = static_cast<int>(to_int(f[0], what));
  s.factor = to_double(f[1], what);
  if (f.size() > 2) s.from = to_int(f[2], what);
  if (f.size() > 3) s.to = to_int(f[3], what);
  FLEXTP_CHECK(s.rank >= 0, what, ": rank must be >= 0");
  FLEXTP_CHECK(s.factor >= 1 && s.factor <= 1000, what, ": factor must be in [1, 1000]");
  FLEXTP_CHECK(s.from >= 0 && s.from < s.to, what, ": needs 0 <= FROM < TO");
  return s;
}

SlowdownSchedule::SlowdownSchedule(std::vector<StragglerSpec> specs, int ranks)
    : specs_(std::move(specs)), ranks_(ranks) {
  for (const StragglerSpec& s : specs_)
    FLEXTP_CHECK(s.rank < ranks, "a straggler names rank ", s.rank, " but there are only ", ranks, " ranks");
}

void SlowdownSchedule::load_trace(const std::string& path) {
  std::ifstream in(path);
  FLEXTP_CHECK(in, "cannot open straggler trace file ", path);
  std::string line;
  int64_t line_no = 0, last_step = -1;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    std::string where = path + ":" + std::to_string(line_no);
    std::vector<std::string> f = split_fields(line, ',');
    if (line_no == 1 && !f.empty() && f[0] == "step") continue;  // header
    FLEXTP_CHECK(static_cast<int>(f.size()) == ranks_ + 1, where, ": expected step and ", ranks_,
                 " factors, got ", f.size(), " fields");
    int64_t step = to_int(f[0], where);
    FLEXTP_CHECK(step > last_step, where, ": steps must increase (", step, " after ", last_step, ")");
    std::vector<double> factors;
    for (int r = 0; r < ranks_; ++r) {
      double x = to_double(f[r + 1], where);
      FLEXTP_CHECK(x >= 1 && x <= 1000, where, ": factor ", x, " must be in [1, 1000]");
      factors.push_back(x);
    }
    trace_.push_back({step, factors});
    last_step = step;
  }
  FLEXTP_CHECK(!trace_.empty(), path, ": the trace holds no step");
}

SlowdownSchedule SlowdownSchedule::ranks(int first, int count) const {
  FLEXTP_CHECK(first >= 0 && count > 0 && first + count <= ranks_, "ranks ", first, "..", first + count - 1,
               " of a slowdown schedule of ", ranks_, " ranks");
  SlowdownSchedule out;
  out.ranks_ = count;
  for (StragglerSpec s : specs_)
    if (s.rank >= first && s.rank < first + count) s.rank -= first, out.specs_.push_back(s);
  for (const auto& [step, factors] : trace_)
    out.trace_.push_back({step, std::vector<double>(factors.begin() + first, factors.begin() + first + count)});
  return out;
}

double SlowdownSchedule::factor(int rank, int64_t step) const {
  double f = 1.0;
  for (const StragglerSpec& s : specs_)
    if (s.rank == rank && step >= s.from && step < s.to) f *= s.factor;
  for (auto it = trace_.rbegin(); it != trace_.rend(); ++it)
    if (it->first <= step) {
      f *= it->second[rank];
      break;
    }
  return f;
}

bool ContendSpec::busy_at(double t_ms) const {
  return continuous() || std::fmod(std::max(t_ms, 0.0), period_ms) < busy_ms;
}

double ContendSpec::until_switch(double t_ms) const {
  if (continuous()) return std::numeric_limits<double>::infinity();
  double phase = std::fmod(std::max(t_ms, 0.0), period_ms);
  return phase < busy_ms ? busy_ms - phase : period_ms - phase;
}

ContendSpec::Phase ContendSpec::phase_at(double t_ms, double slice_ms) const {
  return {busy_at(t_ms), std::min(until_switch(t_ms), slice_ms)};
}

Contention::Contention(const ContendSpec& spec, std::optional<int> gpu) {
  if (gpu) {
    int count = cuda::device_count();
    FLEXTP_CHECK(*gpu >= 0 && *gpu < count, "contention on GPU ", *gpu, ": ", count,
                 " GPU(s) visible", cuda_compiled() ? "" : " (this flextp build has no CUDA backend)");
    cuda::spin(*gpu, 0);  // a failing launch is reported here, not in a thread
  }
  const double start = now_ms();
  auto since_start_ms = [start] { return now_ms() - start; };
  for (int i = 0; i < spec.threads; ++i)
    threads_.emplace_back([this, spec, gpu, since_start_ms] {
      volatile double x = 1.0;
      while (!stop_.load(std::memory_order_relaxed)) {
        // Slices of 5 ms at most, so that the destructor never waits a whole phase.
        ContendSpec::Phase next = spec.phase_at(since_start_ms(), 5.0);
        if (next.busy && gpu) {
          try {
            cuda::spin(*gpu, next.ms);
          } catch (const std::exception& e) {  // nowhere to throw to: the contention ends, said once
            std::fprintf(stderr, "contention on GPU %d stops: %s\n", *gpu, e.what());
            return;
          }
        } else if (next.busy) {
          for (int k = 0; k < 4096; ++k) x = x * 1.0000001 + 1e-9;
        } else {
          std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(next.ms));
        }
      }
    });
}

Contention::~Contention() {
  stop_ = true;
  for (std::thread& t : threads_) t.join();
}

ContendSpec parse_contend(const std::string& spec) {
  std::string what = "contention '" + spec + "' (RANK:THREADS[:BUSY/PERIOD], milliseconds)";
  std::vector<std::string> f = split_fields(spec, ':');
  FLEXTP_CHECK(f.size() == 2 || f.size() == 3, what, ": expected 2 or 3 fields");
  int64_t rank = to_int(f[0], what), threads = to_int(f[1], what);
  FLEXTP_CHECK(rank >= 0 && threads >= 1 && threads <= 256, what, ": needs RANK >= 0 and 1 <= THREADS <= 256");
  ContendSpec c;
  c.rank = static_cast<int>(rank), c.threads = static_cast<int>(threads);
  if (f.size() == 3) {
    std::vector<std::string> duty = split_fields(f[2], '/');
    FLEXTP_CHECK(duty.size() == 2, what, ": the duty cycle is BUSY/PERIOD, e.g. 50/100");
    c.busy_ms = to_double(duty[0], what), c.period_ms = to_double(duty[1], what);
    FLEXTP_CHECK(std::isfinite(c.busy_ms) && std::isfinite(c.period_ms) && c.busy_ms > 0 &&
                     c.busy_ms <= c.period_ms && c.period_ms <= 60000,
                 what, ": needs 0 < BUSY <= PERIOD <= 60000");
  }
  return c;
}

}  // namespace flextp
