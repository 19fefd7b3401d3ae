#pragma once
// Forwards to another communicator, but sums as a ring all-reduce does (NCCL's): the buffer cut
// into as many chunks as ranks, chunk c summed from rank c + 1 on around the ring. An element at
// another offset of a buffer of another size is then summed in another order, with other
// rounding: what the data-parallel sum must not let a replicated parameter meet on one slot and
// not another. (An MPI library's in-place non-blocking all-reduce may sum every element in one
// order, which would hide that here.)
#include <cstring>

#include "core/tensor.h"
#include "parallel/comm/communicator.h"

namespace flextp::test {

class RingOrderCommunicator : public Communicator {
 public:
  explicit RingOrderCommunicator(Communicator& inner) : inner_(inner) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  const char* backend() const override { return inner_.backend(); }
  void all_reduce(Tensor& t, ReduceOp op) override {
    if (op != ReduceOp::Sum || size() == 1 || !t.device().is_cpu() ||
        (t.dtype() != DType::F32 && t.dtype() != DType::F64)) {
      inner_.all_reduce(t, op);
      return;
    }
    if (t.dtype() == DType::F32)
      ring_sum<float>(t);
    else
      ring_sum<double>(t);
  }
  void broadcast(Tensor& t, int root) override { inner_.broadcast(t, root); }
  void all_gather(const Tensor& in, Tensor& out) override { inner_.all_gather(in, out); }
  void reduce_scatter(const Tensor& in, Tensor& out) override { inner_.reduce_scatter(in, out); }
  void send_recv(const std::vector<Transfer>& sends, const std::vector<Transfer>& recvs) override {
    inner_.send_recv(sends, recvs);
  }
  void all_to_all_v(const Tensor& send, const std::vector<int64_t>& send_bytes, Tensor& recv,
                    const std::vector<int64_t>& recv_bytes) override {
    inner_.all_to_all_v(send, send_bytes, recv, recv_bytes);
  }
  void barrier() override { inner_.barrier(); }

 private:
  template <typename T>
  void ring_sum(Tensor& t) {
    const int p = size();
    const int64_t n = t.numel();
    Tensor mine = view_as(t, {n}).clone();
    Tensor all = Tensor::empty({p * n}, t.dtype());
    inner_.all_gather(mine, all);
    const T* x = all.data<T>();
    std::vector<T> sum(static_cast<size_t>(n));
    for (int c = 0; c < p; ++c) {
      const int64_t from = n * c / p, to = n * (c + 1) / p;
      for (int64_t i = from; i < to; ++i) {
        T acc = x[((c + 1) % p) * n + i];
        for (int k = 2; k <= p; ++k) acc += x[((c + k) % p) * n + i];
        sum[static_cast<size_t>(i)] = acc;
      }
    }
    std::memcpy(t.raw(), sum.data(), sum.size() * sizeof(T));
  }
  Communicator& inner_;
};

}  // namespace flextp::test
