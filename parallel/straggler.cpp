#include "parallel/straggler.h"

#include "core/cuda/cuda_runtime_api.h"

#include <chrono>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace flextp {
namespace {

double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string part;
  std::istringstream in(s);
  while (std::getline(in, part, sep)) out.push_back(part);
  return out;
}

double to_double(const std::string& s, const std::string& what) {
  try {
    size_t used = 0;
    double v = std::stod(s, &used);
    if (used == s.size()) return v;
  } catch (const std::exception&) {
  }
  FLEXTP_FAIL(what, ": '", s, "' is not a number");
}

int64_t to_int(const std::string& s, const std::string& what) {
  try {
    size_t used = 0;
    long long v = std::stoll(s, &used);
    if (used == s.size()) return v;
  } catch (const std::exception&) {
  }
  FLEXTP_FAIL(what, ": '", s, "' is not an integer");
}

}  // namespace

StragglerSpec parse_straggler(const std::string& spec) {
  std::string what = "straggler '" + spec + "' (RANK:FACTOR[:FROM[:TO]])";
  std::vector<std::string> f = split(spec, ':');
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
    std::vector<std::string> f = split(line, ',');
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

StepClock::StepClock(Communicator& inner, SlowdownSchedule schedule)
    : inner_(inner), schedule_(std::move(schedule)), segment_start_(now_ms()) {}

void StepClock::begin_step(int64_t step) {
  factor_ = schedule_.factor(inner_.rank(), step);
  compute_ms_ = wait_ms_ = 0;
  segment_start_ = now_ms();
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
  segment_start_ = end;
}

template <typename F>
void StepClock::collective(F&& f) {
  end_segment();
  f();
  double end = now_ms();
  wait_ms_ += end - segment_start_;
  segment_start_ = end;
}

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

Contention::Contention(int threads) {
  for (int i = 0; i < threads; ++i)
    threads_.emplace_back([this] {
      volatile double x = 1.0;
      while (!stop_.load(std::memory_order_relaxed)) x = x * 1.0000001 + 1e-9;
    });
}

Contention::~Contention() {
  stop_ = true;
  for (std::thread& t : threads_) t.join();
}

std::pair<int, int> parse_contend(const std::string& spec) {
  std::string what = "contention '" + spec + "' (RANK:THREADS)";
  std::vector<std::string> f = split(spec, ':');
  FLEXTP_CHECK(f.size() == 2, what, ": expected 2 fields");
  int64_t rank = to_int(f[0], what), threads = to_int(f[1], what);
  FLEXTP_CHECK(rank >= 0 && threads >= 1 && threads <= 256, what, ": needs RANK >= 0 and 1 <= THREADS <= 256");
  return {static_cast<int>(rank), static_cast<int>(threads)};
}

}  // namespace flextp
