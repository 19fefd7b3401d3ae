#pragma once
// Forwards to another communicator and counts the calls of each collective: a test can then tell
// which way a sum or a migration actually travelled, not only that the result was right.
#include <map>
#include <string>

#include "parallel/comm/communicator.h"

namespace flextp::test {

class CountingCommunicator : public Communicator {
 public:
  explicit CountingCommunicator(Communicator& inner) : inner_(inner) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  const char* backend() const override { return inner_.backend(); }
  void all_reduce(Tensor& t, ReduceOp op) override {
    ++calls[op == ReduceOp::Sum ? "all_reduce sum" : "all_reduce max"];
    inner_.all_reduce(t, op);
  }
  void broadcast(Tensor& t, int root) override {
    ++calls["broadcast"];
    inner_.broadcast(t, root);
  }
  void all_gather(const Tensor& in, Tensor& out) override {
    ++calls["all_gather"];
    inner_.all_gather(in, out);
  }
  void reduce_scatter(const Tensor& in, Tensor& out) override {
    ++calls["reduce_scatter"];
    inner_.reduce_scatter(in, out);
  }
  void send_recv(const std::vector<Transfer>& sends, const std::vector<Transfer>& recvs) override {
    ++calls["send_recv"];
    inner_.send_recv(sends, recvs);
  }
  void all_to_all_v(const Tensor& send, const std::vector<int64_t>& send_bytes, Tensor& recv,
                    const std::vector<int64_t>& recv_bytes) override {
    ++calls["all_to_all_v"];
    inner_.all_to_all_v(send, send_bytes, recv, recv_bytes);
  }
  void barrier() override {
    ++calls["barrier"];
    inner_.barrier();
  }
  int count(const std::string& name) const {
    auto it = calls.find(name);
    return it == calls.end() ? 0 : it->second;
  }
  std::map<std::string, int> calls;

 private:
  Communicator& inner_;
};

}  // namespace flextp::test
