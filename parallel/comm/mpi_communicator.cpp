#include "parallel/comm/mpi_communicator.h"

#include <mpi.h>

#include <cstdlib>
#include <limits>
#include <numeric>

#include "parallel/comm/mpi_calls.h"
#include "parallel/comm/placement.h"

namespace flextp {
namespace {

bool g_initialised_here = false;
int g_place_key = 0;  // this rank's place (mpi_place_ranks); 0 everywhere keeps world-rank order

MPI_Datatype mpi_type(DType t) {
  switch (t) {
    case DType::F32: return MPI_FLOAT;
    case DType::F64: return MPI_DOUBLE;
    case DType::I32: return MPI_INT;
    default: FLEXTP_FAIL("MPI cannot reduce ", dtype_name(t), " tensors");
  }
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
  // The ranks of the world that pass the same color, in placed order (mpi_place_ranks).
  explicit MpiCommunicator(int color) {
    FLEXTP_MPI(MPI_Comm_split(MPI_COMM_WORLD, color, g_place_key, &comm_));
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
    FLEXTP_MPI(MPI_Allreduce(MPI_IN_PLACE, s.host.raw(), as_count(t.numel(), "all_reduce"),
                             mpi_type(t.dtype()), op == ReduceOp::Sum ? MPI_SUM : MPI_MAX, comm_));
    s.copy_out();
  }

  void broadcast(Tensor& t, int root) override {
    Staged s(t, rank_ == root);
    FLEXTP_MPI(MPI_Bcast(s.host.raw(), as_count(t.nbytes(), "broadcast"), MPI_BYTE, root, comm_));
    s.copy_out();
  }

  void all_gather(const Tensor& in, Tensor& out) override {
    FLEXTP_CHECK(out.nbytes() == in.nbytes() * size_, "all_gather: output ", out.str(),
                 " is not ", size_, " times the input ", in.str());
    Staged si(in), so(out, false);
    int n = as_count(in.nbytes(), "all_gather");
    FLEXTP_MPI(MPI_Allgather(si.host.raw(), n, MPI_BYTE, so.host.raw(), n, MPI_BYTE, comm_));
    so.copy_out();
  }

  void reduce_scatter(const Tensor& in, Tensor& out) override {
    FLEXTP_CHECK(in.numel() == out.numel() * size_ && in.dtype() == out.dtype(), "reduce_scatter: input ",
                 in.str(), " is not ", size_, " times the output ", out.str());
    Staged si(in), so(out, false);
    FLEXTP_MPI(MPI_Reduce_scatter_block(si.host.raw(), so.host.raw(), as_count(out.numel(), "reduce_scatter"),
                                        mpi_type(in.dtype()), MPI_SUM, comm_));
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
    FLEXTP_MPI(MPI_Waitall(static_cast<int>(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE));
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
    FLEXTP_MPI(MPI_Alltoallv(ss.host.raw(), sc.data(), sd.data(), MPI_BYTE, sr.host.raw(), rc.data(),
                             rd.data(), MPI_BYTE, comm_));
    sr.copy_out();
  }

  void barrier() override { FLEXTP_MPI(MPI_Barrier(comm_)); }

 private:
  static constexpr int kTag = 7;
  void check_peer(int peer) const {
    FLEXTP_CHECK(peer >= 0 && peer < size_ && peer != rank_, "send_recv: bad peer ", peer, " (rank ",
                 rank_, " of ", size_, ")");
  }
  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
};

}  // namespace

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

std::unique_ptr<Communicator> make_mpi_communicator(int color) {
  FLEXTP_CHECK(MpiRuntime::active(), "make_mpi_communicator: MPI is not initialised");
  FLEXTP_CHECK(color >= 0, "make_mpi_communicator: color ", color, " must be >= 0");
  return std::make_unique<MpiCommunicator>(color);
}

std::vector<std::string> mpi_place_ranks(bool by_host) {
  FLEXTP_CHECK(MpiRuntime::active(), "mpi_place_ranks: MPI is not initialised");
  int world = 1, rank = 0, len = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  FLEXTP_MPI(MPI_Get_processor_name(name, &len));
  std::vector<char> all(static_cast<size_t>(world) * MPI_MAX_PROCESSOR_NAME);
  FLEXTP_MPI(MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR,
                           MPI_COMM_WORLD));
  std::vector<std::string> host_of(world);
  for (int w = 0; w < world; ++w) {
    const char* at = all.data() + static_cast<size_t>(w) * MPI_MAX_PROCESSOR_NAME;
    host_of[w].assign(at, strnlen(at, MPI_MAX_PROCESSOR_NAME));  // a name may fill the buffer
  }
  std::vector<int> place(world);
  std::iota(place.begin(), place.end(), 0);  // the launcher's order
  if (by_host) place = places_by_host(host_of);
  g_place_key = place[rank];
  std::vector<std::string> hosts(world);
  for (int w = 0; w < world; ++w) hosts[place[w]] = host_of[w];
  return hosts;
}

int mpi_place_key() { return g_place_key; }

void check_mpi(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  FLEXTP_FAIL("MPI call ", call, " failed: ", std::string(text, len));
}

int as_count(int64_t n, const char* what) {
  FLEXTP_CHECK(n >= 0 && n <= std::numeric_limits<int>::max(), what, ": ", n,
               " elements exceed one MPI message; split the transfer");
  return static_cast<int>(n);
}

int mpi_ranks_on_this_node() {
  FLEXTP_CHECK(MpiRuntime::active(), "mpi_ranks_on_this_node: MPI is not initialised");
  MPI_Comm node;
  FLEXTP_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  int size = 1;
  MPI_Comm_size(node, &size);
  MPI_Comm_free(&node);
  return size;
}

}  // namespace flextp
