#include "parallel/timed_communicator.h"

namespace flextp {

const char* primitive_name(Primitive p) {
  switch (p) {
    case Primitive::AllReduce: return "all_reduce";
    case Primitive::Broadcast: return "broadcast";
    case Primitive::AllGather: return "all_gather";
    case Primitive::AllGatherV: return "all_gather_v";
    case Primitive::ReduceScatter: return "reduce_scatter";
    case Primitive::SendRecv: return "send_recv";
    case Primitive::AllToAllV: return "all_to_all_v";
    case Primitive::Barrier: return "barrier";
    case Primitive::Count: break;
  }
  return "?";
}

void TimedCommunicator::all_reduce(Tensor& t, ReduceOp op) {
  timed(Primitive::AllReduce, t.nbytes(), [&] { inner_.all_reduce(t, op); });
}
void TimedCommunicator::broadcast(Tensor& t, int root) {
  timed(Primitive::Broadcast, t.nbytes(), [&] { inner_.broadcast(t, root); });
}
void TimedCommunicator::all_gather(const Tensor& in, Tensor& out) {
  timed(Primitive::AllGather, in.nbytes(), [&] { inner_.all_gather(in, out); });
}
void TimedCommunicator::all_gather_v(const Tensor& in, Tensor& out, const std::vector<int64_t>& rows_of) {
  timed(Primitive::AllGatherV, in.nbytes(), [&] { inner_.all_gather_v(in, out, rows_of); });
}
void TimedCommunicator::reduce_scatter(const Tensor& in, Tensor& out) {
  timed(Primitive::ReduceScatter, in.nbytes(), [&] { inner_.reduce_scatter(in, out); });
}
void TimedCommunicator::send_recv(const std::vector<Transfer>& sends, const std::vector<Transfer>& recvs) {
  int64_t bytes = 0;
  for (const Transfer& s : sends) bytes += s.buffer.nbytes();
  timed(Primitive::SendRecv, bytes, [&] { inner_.send_recv(sends, recvs); });
}
void TimedCommunicator::all_to_all_v(const Tensor& send, const std::vector<int64_t>& send_bytes, Tensor& recv,
                                     const std::vector<int64_t>& recv_bytes) {
  int64_t bytes = 0;
  for (int64_t b : send_bytes) bytes += b;
  timed(Primitive::AllToAllV, bytes, [&] { inner_.all_to_all_v(send, send_bytes, recv, recv_bytes); });
}
void TimedCommunicator::barrier() {
  timed(Primitive::Barrier, 0, [&] { inner_.barrier(); });
}

double TimedCommunicator::total_seconds() const {
  double s = 0;
  for (const PrimitiveStats& p : stats_) s += p.seconds;
  return s;
}

}  // namespace flextp
