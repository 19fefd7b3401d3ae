// The NCCL communicator. Every call runs on the compute stream (core/cuda/stream.h), after the
// kernels that produced its inputs, and waits for it, so that callers see the result as with MPI
// and the step clock counts the wait.
#include "parallel/comm/nccl_communicator.h"

#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include "core/cuda/check.h"
#include "core/cuda/stream.h"
#include "parallel/comm/mpi_communicator.h"

namespace flextp {
namespace {

#define FLEXTP_NCCL(call)                                                                   \
  do {                                                                                      \
    ncclResult_t flextp_r_ = (call);                                                        \
    FLEXTP_CHECK(flextp_r_ == ncclSuccess, "NCCL call ", #call, " failed: ",                \
                 ncclGetErrorString(flextp_r_), "; NCCL_DEBUG=INFO prints the reason");     \
  } while (0)

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::F32: return ncclFloat32;
    case DType::F64: return ncclFloat64;
    case DType::I32: return ncclInt32;
    case DType::BF16: return ncclBfloat16;
  }
  return ncclFloat32;
}

// NCCL reads and writes GPU memory only; the small host tensors of the balancing logic (speeds,
// norms, statistics) are staged through the GPU and copied back.
struct Staged {
  Tensor host, gpu;
  Staged(const Tensor& t, int device) : host(t), gpu(t.is_cuda() ? t : t.to(Device::cuda(device))) {}
  void copy_back() {
    if (!host.is_cuda()) host.copy_from(gpu);
  }
};

class NcclCommunicator : public Communicator {
 public:
  // Over the MPI communicator `group` (MPI_COMM_WORLD, or one group of it): its rank 0 makes the
  // unique id and broadcasts it over the group, so that each group gets a communicator of its own.
  NcclCommunicator(int device, MPI_Comm group) : device_(device) {
    MPI_Comm_rank(group, &rank_);
    MPI_Comm_size(group, &size_);
    FLEXTP_CUDA_CHECK(cudaSetDevice(device_));
    ncclUniqueId id;
    if (rank_ == 0) FLEXTP_NCCL(ncclGetUniqueId(&id));
    FLEXTP_CHECK(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, group) == MPI_SUCCESS,
                 "broadcasting the NCCL unique id over MPI failed");
    FLEXTP_NCCL(ncclCommInitRank(&comm_, size_, id, rank_));
    stream_ = cuda::stream();
  }
  ~NcclCommunicator() override { ncclCommDestroy(comm_); }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char* backend() const override { return "nccl"; }

  void all_reduce(Tensor& t, ReduceOp op) override {
    Staged st(t, device_);
    FLEXTP_NCCL(ncclAllReduce(st.gpu.raw(), st.gpu.raw(), t.numel(), nccl_type(t.dtype()),
                              op == ReduceOp::Sum ? ncclSum : ncclMax, comm_, stream_));
    wait();
    st.copy_back();
  }
  void broadcast(Tensor& t, int root) override {
    Staged st(t, device_);
    FLEXTP_NCCL(ncclBroadcast(st.gpu.raw(), st.gpu.raw(), t.nbytes(), ncclUint8, root, comm_, stream_));
    wait();
    st.copy_back();
  }
  void all_gather(const Tensor& in, Tensor& out) override {
    Staged si(in, device_), so(out, device_);
    FLEXTP_NCCL(ncclAllGather(si.gpu.raw(), so.gpu.raw(), in.nbytes(), ncclUint8, comm_, stream_));
    wait();
    so.copy_back();
  }
  void reduce_scatter(const Tensor& in, Tensor& out) override {
    Staged si(in, device_), so(out, device_);
    FLEXTP_NCCL(ncclReduceScatter(si.gpu.raw(), so.gpu.raw(), out.numel(), nccl_type(in.dtype()), ncclSum, comm_, stream_));
    wait();
    so.copy_back();
  }
  void send_recv(const std::vector<Transfer>& sends, const std::vector<Transfer>& recvs) override {
    std::vector<Staged> ss, rs;
    for (const Transfer& s : sends) ss.emplace_back(s.buffer, device_);
    for (const Transfer& r : recvs) rs.emplace_back(r.buffer, device_);
    FLEXTP_NCCL(ncclGroupStart());
    for (size_t i = 0; i < recvs.size(); ++i)
      FLEXTP_NCCL(ncclRecv(rs[i].gpu.raw(), rs[i].gpu.nbytes(), ncclUint8, recvs[i].peer, comm_, stream_));
    for (size_t i = 0; i < sends.size(); ++i)
      FLEXTP_NCCL(ncclSend(ss[i].gpu.raw(), ss[i].gpu.nbytes(), ncclUint8, sends[i].peer, comm_, stream_));
    FLEXTP_NCCL(ncclGroupEnd());
    wait();
    for (Staged& r : rs) r.copy_back();
  }
  void all_to_all_v(const Tensor& send_any, const std::vector<int64_t>& send_bytes, Tensor& recv_any,
                    const std::vector<int64_t>& recv_bytes) override {
    Staged ss(send_any, device_), rs(recv_any, device_);
    const Tensor& send = ss.gpu;
    Tensor& recv = rs.gpu;
    size_t s_at = 0, r_at = 0;
    FLEXTP_NCCL(ncclGroupStart());
    for (int r = 0; r < size_; ++r) {
      if (send_bytes[r]) FLEXTP_NCCL(ncclSend(static_cast<const char*>(send.raw()) + s_at, send_bytes[r], ncclUint8, r, comm_, stream_));
      if (recv_bytes[r]) FLEXTP_NCCL(ncclRecv(static_cast<char*>(recv.raw()) + r_at, recv_bytes[r], ncclUint8, r, comm_, stream_));
      s_at += send_bytes[r];
      r_at += recv_bytes[r];
    }
    FLEXTP_NCCL(ncclGroupEnd());
    wait();
    rs.copy_back();
  }
  void barrier() override {
    Tensor one = Tensor::ones({1}, DType::F32, Device::cuda(device_));
    all_reduce(one, ReduceOp::Sum);
  }

 private:
  void wait() { FLEXTP_CUDA_CHECK(cudaStreamSynchronize(stream_)); }
  int device_, rank_ = 0, size_ = 1;
  ncclComm_t comm_{};
  cudaStream_t stream_{};
};

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(int device) { return make_nccl_communicator(device, 0); }

std::unique_ptr<Communicator> make_nccl_communicator(int device, int color) {
  FLEXTP_CHECK(color >= 0, "make_nccl_communicator: color ", color, " must be >= 0");
  MPI_Comm group;
  FLEXTP_CHECK(MPI_Comm_split(MPI_COMM_WORLD, color, mpi_place_key(), &group) == MPI_SUCCESS,
               "splitting the MPI world into NCCL groups failed");
  // The MPI group only carries the unique id: NCCL keeps no reference to it.
  struct Free {
    MPI_Comm* c;
    ~Free() { MPI_Comm_free(c); }
  } free_group{&group};
  return std::make_unique<NcclCommunicator>(device, group);
}

}  // namespace flextp
