#include "parallel/comm/mpi_communicator.h"

#include <mpi.h>

#include <chrono>
#include <cstdlib>
#include <limits>
#include <thread>

namespace flextp {
namespace {

bool g_initialised_here = false;
MpiIdleWait g_idle_wait;

void check_mpi(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  FLEXTP_FAIL("MPI call ", call, " failed: ", std::string(text, len));
}
#define FLEXTP_MPI(call) check_mpi((call), #call)

MPI_Datatype mpi_type(DType t) {
  switch (t) {
    case DType::F32: return MPI_FLOAT;
    case DType::F64: return MPI_DOUBLE;
    case DType::I32: return MPI_INT;
    default: FLEXTP_FAIL("MPI cannot reduce ", dtype_name(t), " tensors");
  }
}

int as_count(int64_t n, const char* what) {
  FLEXTP_CHECK(n >= 0 && n <= std::numeric_limits<int>::max(), what, ": ", n,
               " elements exceed one MPI message; split the transfer");
  return static_cast<int>(n);
}

// A host copy of a GPU tensor for the duration of one call (the tensor itself when on the host).
struct Staged {
  Tensor device, host;
  explicit Staged(const Tensor& t, bool copy_in = true)
      : device(t), host(t.is_cuda() ? (copy_in ? t.to(Device::cpu()) : Tensor::empty(t.shape(), t.dtype())) : t) {}
  void copy_out() {
    if (device.is_cuda()) device.copy_from(host);
  }
};

class MpiCommunicator : public Communicator {
 public:
  // The ranks of the world that pass the same color, in world-rank order.
  explicit MpiCommunicator(int color) : idle_(g_idle_wait) {
    FLEXTP_MPI(MPI_Comm_split(MPI_COMM_WORLD, color, 0, &comm_));
    // Errors come back as codes that become exceptions naming the call.
    FLEXTP_MPI(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
    FLEXTP_MPI(MPI_Comm_rank(comm_, &rank_));
    FLEXTP_MPI(MPI_Comm_size(comm_, &size_));
  }
  ~MpiCommunicator() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char* backend() const override { return "mpi"; }

  void all_reduce(Tensor& t, ReduceOp op) override {
    if (t.numel() == 0) return;
    Staged s(t);
    const int n = as_count(t.numel(), "all_reduce");
    const MPI_Op mop = op == ReduceOp::Sum ? MPI_SUM : MPI_MAX;
    if (idle_.sleep) {
      MPI_Request r;
      FLEXTP_MPI(MPI_Iallreduce(MPI_IN_PLACE, s.host.raw(), n, mpi_type(t.dtype()), mop, comm_, &r));
      finish(&r, 1);
    } else {
      FLEXTP_MPI(MPI_Allreduce(MPI_IN_PLACE, s.host.raw(), n, mpi_type(t.dtype()), mop, comm_));
    }
    s.copy_out();
  }

  std::unique_ptr<PendingReduce> start_all_reduce(Tensor& t, ReduceOp op) override {
    if (t.numel() == 0) return finished_reduce();
    auto p = std::make_unique<Pending>(*this, t);
    const int n = as_count(t.numel(), "all_reduce");
    FLEXTP_MPI(MPI_Iallreduce(MPI_IN_PLACE, p->staged.host.raw(), n, mpi_type(t.dtype()),
                              op == ReduceOp::Sum ? MPI_SUM : MPI_MAX, comm_, &p->request));
    return p;
  }

  void broadcast(Tensor& t, int root) override {
    Staged s(t, rank_ == root);
    const int n = as_count(t.nbytes(), "broadcast");
    if (idle_.sleep) {
      MPI_Request r;
      FLEXTP_MPI(MPI_Ibcast(s.host.raw(), n, MPI_BYTE, root, comm_, &r));
      finish(&r, 1);
    } else {
      FLEXTP_MPI(MPI_Bcast(s.host.raw(), n, MPI_BYTE, root, comm_));
    }
    s.copy_out();
  }

  void all_gather(const Tensor& in, Tensor& out) override {
    FLEXTP_CHECK(out.nbytes() == in.nbytes() * size_, "all_gather: output ", out.str(),
                 " is not ", size_, " times the input ", in.str());
    Staged si(in), so(out, false);
    int n = as_count(in.nbytes(), "all_gather");
    if (idle_.sleep) {
      MPI_Request r;
      FLEXTP_MPI(MPI_Iallgather(si.host.raw(), n, MPI_BYTE, so.host.raw(), n, MPI_BYTE, comm_, &r));
      finish(&r, 1);
    } else {
      FLEXTP_MPI(MPI_Allgather(si.host.raw(), n, MPI_BYTE, so.host.raw(), n, MPI_BYTE, comm_));
    }
    so.copy_out();
  }

  void reduce_scatter(const Tensor& in, Tensor& out) override {
    FLEXTP_CHECK(in.numel() == out.numel() * size_ && in.dtype() == out.dtype(), "reduce_scatter: input ",
                 in.str(), " is not ", size_, " times the output ", out.str());
    Staged si(in), so(out, false);
    const int n = as_count(out.numel(), "reduce_scatter");
    if (idle_.sleep) {
      MPI_Request r;
      FLEXTP_MPI(MPI_Ireduce_scatter_block(si.host.raw(), so.host.raw(), n, mpi_type(in.dtype()), MPI_SUM, comm_, &r));
      finish(&r, 1);
    } else {
      FLEXTP_MPI(MPI_Reduce_scatter_block(si.host.raw(), so.host.raw(), n, mpi_type(in.dtype()), MPI_SUM, comm_));
    }
    so.copy_out();
  }

  void send_recv(const std::vector<Transfer>& sends, const std::vector<Transfer>& recvs) override {
    std::vector<MPI_Request> reqs;
    std::vector<Staged> staged_recvs;
    std::vector<Staged> staged_sends;
    staged_sends.reserve(sends.size());
    staged_recvs.reserve(recvs.size());
    for (const Transfer& r : recvs) {
      check_peer(r.peer);
      staged_recvs.emplace_back(r.buffer, false);
      reqs.emplace_back();
      FLEXTP_MPI(MPI_Irecv(staged_recvs.back().host.raw(), as_count(r.buffer.nbytes(), "recv"), MPI_BYTE,
                           r.peer, kTag, comm_, &reqs.back()));
    }
    for (const Transfer& s : sends) {
      check_peer(s.peer);
      staged_sends.emplace_back(s.buffer);
      reqs.emplace_back();
      FLEXTP_MPI(MPI_Isend(staged_sends.back().host.raw(), as_count(s.buffer.nbytes(), "send"), MPI_BYTE,
                           s.peer, kTag, comm_, &reqs.back()));
    }
    finish(reqs.data(), static_cast<int>(reqs.size()));
    for (Staged& r : staged_recvs) r.copy_out();
  }

  void all_to_all_v(const Tensor& send, const std::vector<int64_t>& send_bytes, Tensor& recv,
                    const std::vector<int64_t>& recv_bytes) override {
    FLEXTP_CHECK(static_cast<int>(send_bytes.size()) == size_ && static_cast<int>(recv_bytes.size()) == size_,
                 "all_to_all_v needs one byte count per rank");
    std::vector<int> sc(size_), sd(size_), rc(size_), rd(size_);
    int64_t s_at = 0, r_at = 0;
    for (int r = 0; r < size_; ++r) {
      sc[r] = as_count(send_bytes[r], "all_to_all_v");
      sd[r] = as_count(s_at, "all_to_all_v");
      rc[r] = as_count(recv_bytes[r], "all_to_all_v");
      rd[r] = as_count(r_at, "all_to_all_v");
      s_at += send_bytes[r];
      r_at += recv_bytes[r];
    }
    FLEXTP_CHECK(s_at <= static_cast<int64_t>(send.nbytes()) && r_at <= static_cast<int64_t>(recv.nbytes()),
                 "all_to_all_v: byte counts exceed the buffers");
    Staged ss(send), sr(recv, false);
    if (idle_.sleep) {
      MPI_Request r;
      FLEXTP_MPI(MPI_Ialltoallv(ss.host.raw(), sc.data(), sd.data(), MPI_BYTE, sr.host.raw(), rc.data(), rd.data(),
                                MPI_BYTE, comm_, &r));
      finish(&r, 1);
    } else {
      FLEXTP_MPI(MPI_Alltoallv(ss.host.raw(), sc.data(), sd.data(), MPI_BYTE, sr.host.raw(), rc.data(),
                               rd.data(), MPI_BYTE, comm_));
    }
    sr.copy_out();
  }

  void barrier() override {
    if (idle_.sleep) {
      MPI_Request r;
      FLEXTP_MPI(MPI_Ibarrier(comm_, &r));
      finish(&r, 1);
    } else {
      FLEXTP_MPI(MPI_Barrier(comm_));
    }
  }

 private:
  // A started MPI_Iallreduce; MPI_Test drives MPI's progress while the caller computes.
  struct Pending : PendingReduce {
    MpiCommunicator& comm;
    Staged staged;
    MPI_Request request = MPI_REQUEST_NULL;
    Pending(MpiCommunicator& c, const Tensor& t) : comm(c), staged(t) {}
    ~Pending() override {
      if (request != MPI_REQUEST_NULL) MPI_Wait(&request, MPI_STATUS_IGNORE);
    }
    bool test() override {
      if (done) return true;
      int finished = 0;
      FLEXTP_MPI(MPI_Test(&request, &finished, MPI_STATUS_IGNORE));
      if (finished) staged.copy_out(), done = true;
      return done;
    }
    void wait() override {
      if (done) return;
      comm.finish(&request, 1);
      staged.copy_out(), done = true;
    }
    bool done = false;
  };
  static constexpr int kTag = 7;
  void check_peer(int peer) const {
    FLEXTP_CHECK(peer >= 0 && peer < size_ && peer != rank_, "send_recv: bad peer ", peer, " (rank ",
                 rank_, " of ", size_, ")");
  }
  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
  MpiIdleWait idle_;

  // Completes the requests: MPI_Waitall when spinning, else polls, spinning for idle_.spin_us and
  // then sleeping idle_.sleep_us between tests (MPI_Testall also drives MPI's progress).
  void finish(MPI_Request* reqs, int n) {
    if (!idle_.sleep) {
      FLEXTP_MPI(MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE));
      return;
    }
    using clock = std::chrono::steady_clock;
    const clock::time_point start = clock::now();
    const auto spin = std::chrono::duration<double, std::micro>(idle_.spin_us);
    const auto nap = std::chrono::duration<double, std::micro>(idle_.sleep_us);
    for (int done = 0;;) {
      FLEXTP_MPI(MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE));
      if (done) return;
      if (clock::now() - start > spin) std::this_thread::sleep_for(nap);
    }
  }
};

}  // namespace

void set_mpi_idle_wait(const MpiIdleWait& wait) {
  FLEXTP_CHECK(wait.spin_us >= 0 && wait.sleep_us > 0, "an idle wait of ", wait.spin_us, " us spinning and ",
               wait.sleep_us, " us sleeping: spinning must be >= 0 and sleeping > 0");
  g_idle_wait = wait;
}

MpiRuntime::MpiRuntime(int* argc, char*** argv) {
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (initialised) return;
  int provided = 0;
  FLEXTP_MPI(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided));
  g_initialised_here = true;
}

MpiRuntime::~MpiRuntime() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (g_initialised_here && !finalized) MPI_Finalize();
}

void MpiRuntime::abort_all(int code) {
  if (active()) MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);
}

bool MpiRuntime::active() {
  int initialised = 0, finalized = 0;
  MPI_Initialized(&initialised);
  MPI_Finalized(&finalized);
  return initialised && !finalized;
}

std::unique_ptr<Communicator> make_mpi_communicator() {
  FLEXTP_CHECK(MpiRuntime::active(), "make_mpi_communicator: MPI is not initialised");
  return std::make_unique<MpiCommunicator>(0);
}

std::unique_ptr<Communicator> make_mpi_communicator(int color) {
  FLEXTP_CHECK(MpiRuntime::active(), "make_mpi_communicator: MPI is not initialised");
  FLEXTP_CHECK(color >= 0, "make_mpi_communicator: color ", color, " must be >= 0");
  return std::make_unique<MpiCommunicator>(color);
}

}  // namespace flextp
