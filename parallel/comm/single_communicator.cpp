// The one-rank communicator: reductions over one rank are the identity.
#include <cstring>

#include "parallel/comm/communicator.h"

namespace flextp {
namespace {

class SingleProcessCommunicator : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  const char* backend() const override { return "single"; }
  void all_reduce(Tensor&, ReduceOp) override {}
  void broadcast(Tensor&, int) override {}
  void all_gather(const Tensor& in, Tensor& out) override { out.copy_from(in); }
  void reduce_scatter(const Tensor& in, Tensor& out) override { out.copy_from(in); }
  void send_recv(const std::vector<Transfer>& sends, const std::vector<Transfer>& recvs) override {
    FLEXTP_CHECK(sends.empty() && recvs.empty(), "send_recv on a one-rank communicator");
  }
  void all_to_all_v(const Tensor& send, const std::vector<int64_t>& send_bytes, Tensor& recv,
                    const std::vector<int64_t>& recv_bytes) override {
    FLEXTP_CHECK(send_bytes.size() == 1 && recv_bytes.size() == 1 && send_bytes[0] == recv_bytes[0],
                 "all_to_all_v on one rank needs equal send and receive sizes");
    if (send_bytes[0]) std::memcpy(recv.raw(), send.raw(), send_bytes[0]);
  }
  void barrier() override {}
};

}  // namespace

std::unique_ptr<Communicator> make_single_process_communicator() {
  return std::make_unique<SingleProcessCommunicator>();
}

}  // namespace flextp
