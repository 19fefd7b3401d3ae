#include "bench/thread_ranks.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"

namespace flextp {

void ThreadMeeting::wait() {
  std::unique_lock<std::mutex> lock(m_);
  FLEXTP_CHECK(!failed_, "another rank's thread failed");
  const uint64_t generation = generation_;
  if (++arrived_ == ranks_) {
    arrived_ = 0;
    ++generation_;
    cv_.notify_all();
    return;
  }
  cv_.wait(lock, [&] { return generation_ != generation || failed_; });
  FLEXTP_CHECK(!failed_, "another rank's thread failed");
}

void ThreadMeeting::fail() {
  std::lock_guard<std::mutex> lock(m_);
  failed_ = true;
  cv_.notify_all();
}

int ThreadMeeting::waiting() {
  std::lock_guard<std::mutex> lock(m_);
  return arrived_;
}

void ThreadRank::post(const Tensor& t) {
  FLEXTP_CHECK(!t.is_cuda(), "threads play CPU ranks only");
  const char* bytes = static_cast<const char*>(t.raw());
  meeting_.slot(rank_).assign(bytes, bytes + t.nbytes());
  meeting_.wait();
}

namespace {

template <typename T>
void reduce_slots(ThreadMeeting& meeting, Tensor& t, ReduceOp op) {
  std::vector<T> acc(t.numel());
  for (int r = 0; r < meeting.ranks(); ++r) {
    FLEXTP_CHECK(meeting.slot(r).size() == t.nbytes(), "all_reduce: ranks' sizes differ");
    const T* x = reinterpret_cast<const T*>(meeting.slot(r).data());
    for (size_t i = 0; i < acc.size(); ++i)
      acc[i] = r == 0 ? x[i] : (op == ReduceOp::Sum ? acc[i] + x[i] : std::max(acc[i], x[i]));
  }
  std::memcpy(t.raw(), acc.data(), t.nbytes());
}

}  // namespace

void ThreadRank::all_reduce(Tensor& t, ReduceOp op) {
  post(t);
  switch (t.dtype()) {
    case DType::F32: reduce_slots<float>(meeting_, t, op); break;
    case DType::F64: reduce_slots<double>(meeting_, t, op); break;
    case DType::I32: reduce_slots<int32_t>(meeting_, t, op); break;
    default: meeting_.wait(); FLEXTP_FAIL("all_reduce of ", t.str(), " is not played by threads");
  }
  meeting_.wait();  // every rank has read the slots before any writes its next
}

void ThreadRank::broadcast(Tensor& t, int root) {
  post(t);
  FLEXTP_CHECK(meeting_.slot(root).size() == t.nbytes(), "broadcast: ranks' sizes differ");
  std::memcpy(t.raw(), meeting_.slot(root).data(), t.nbytes());
  meeting_.wait();
}

void ThreadRank::all_gather(const Tensor& in, Tensor& out) {
  post(in);
  FLEXTP_CHECK(out.nbytes() == in.nbytes() * size(), "all_gather: ", out.str(), " does not hold ", size(), " x ",
               in.str());
  char* at = static_cast<char*>(out.raw());
  for (int r = 0; r < size(); ++r) {
    FLEXTP_CHECK(meeting_.slot(r).size() == in.nbytes(), "all_gather: ranks' sizes differ");
    std::memcpy(at + r * in.nbytes(), meeting_.slot(r).data(), in.nbytes());
  }
  meeting_.wait();
}

void ThreadRank::reduce_scatter(const Tensor&, Tensor&) { FLEXTP_FAIL("reduce_scatter is not played by threads"); }

void ThreadRank::send_recv(const std::vector<Transfer>&, const std::vector<Transfer>& recvs) {
  for (Transfer r : recvs) r.buffer.fill_(1.0);
}

void ThreadRank::all_to_all_v(const Tensor&, const std::vector<int64_t>&, Tensor& recv, const std::vector<int64_t>&) {
  recv.fill_(1.0);
}

}  // namespace flextp
