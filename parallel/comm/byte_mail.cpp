#include "parallel/comm/byte_mail.h"

#include <mpi.h>

#include <chrono>
#include <limits>
#include <thread>

#include "core/error.h"
#include "parallel/comm/mpi_calls.h"
#include "parallel/comm/mpi_communicator.h"

namespace flextp {

// A message is its size (8 bytes), then its bytes in pieces that each fit an MPI count, all under
// one tag: MPI matches one sender's messages of one tag in the order they were sent, so the
// receives posted in that order get them in order.
struct ByteMail::Pending {
  MPI_Comm comm;
  int rank = 0, size = 1;
  struct Out {
    std::shared_ptr<const std::string> bytes;  // also being written to disk, perhaps
    uint64_t count = 0;
    std::vector<MPI_Request> requests;
  };
  struct In {
    int from, label;
    uint64_t count = 0;
    bool sized = false;  // the size came: the pieces' receives are posted
    std::string bytes;
    std::vector<MPI_Request> requests;
  };
  std::vector<std::unique_ptr<Out>> out;  // stable addresses: MPI holds them until done
  std::vector<std::unique_ptr<In>> in;
};

namespace {
constexpr int kLetterTag = 100;  // + the label
int64_t g_piece_bytes = int64_t(1) << 30;

int letter_tag(int label) {
  FLEXTP_CHECK(label >= 0 && label <= 30000, "ByteMail: label ", label, " is outside 0..30000");
  return kLetterTag + label;
}

// Posts the sends (or receives) of `n` bytes at `data` in pieces.
template <typename Post>
void in_pieces(char* data, uint64_t n, std::vector<MPI_Request>& requests, const Post& post) {
  for (uint64_t at = 0; at < n; at += static_cast<uint64_t>(g_piece_bytes)) {
    requests.emplace_back();
    post(data + at, static_cast<int>(std::min<uint64_t>(g_piece_bytes, n - at)), &requests.back());
  }
}

bool all_done(std::vector<MPI_Request>& requests) {
  int done = 0;
  FLEXTP_MPI(MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE));
  return done;
}
}  // namespace

void ByteMail::set_piece_bytes(int64_t bytes) {
  FLEXTP_CHECK(bytes > 0 && bytes <= std::numeric_limits<int>::max(), "ByteMail: pieces of ", bytes, " bytes");
  g_piece_bytes = bytes;
}

ByteMail::ByteMail() : p_(std::make_unique<Pending>()) {
  FLEXTP_CHECK(MpiRuntime::active(), "ByteMail: MPI is not initialised");
  FLEXTP_MPI(MPI_Comm_split(MPI_COMM_WORLD, 0, mpi_place_key(), &p_->comm));
  FLEXTP_MPI(MPI_Comm_set_errhandler(p_->comm, MPI_ERRORS_RETURN));
  MPI_Comm_rank(p_->comm, &p_->rank);
  MPI_Comm_size(p_->comm, &p_->size);
}

ByteMail::~ByteMail() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (!idle()) {  // a job ending on an error: MPI may still write into these buffers, so they stay
    for (auto& o : p_->out) o.release();
    for (auto& i : p_->in) i.release();
    return;
  }
  MPI_Comm_free(&p_->comm);
}

int ByteMail::rank() const { return p_->rank; }
int ByteMail::size() const { return p_->size; }
bool ByteMail::idle() const { return p_->out.empty() && p_->in.empty(); }

std::vector<std::string> ByteMail::all_gather(const std::string& mine) {
  int n = as_count(static_cast<int64_t>(mine.size()), "ByteMail::all_gather");
  std::vector<int> sizes(p_->size), at(p_->size);
  FLEXTP_MPI(MPI_Allgather(&n, 1, MPI_INT, sizes.data(), 1, MPI_INT, p_->comm));
  int64_t total = 0;
  for (int r = 0; r < p_->size; ++r) at[r] = as_count(total, "ByteMail::all_gather"), total += sizes[r];
  std::string all(static_cast<size_t>(total), '\0');
  FLEXTP_MPI(MPI_Allgatherv(mine.data(), n, MPI_BYTE, all.data(), sizes.data(), at.data(), MPI_BYTE, p_->comm));
  std::vector<std::string> each(p_->size);
  for (int r = 0; r < p_->size; ++r) each[r] = all.substr(at[r], sizes[r]);
  return each;
}

void ByteMail::barrier() { FLEXTP_MPI(MPI_Barrier(p_->comm)); }

void ByteMail::send(int to, int label, std::shared_ptr<const std::string> bytes) {
  auto o = std::make_unique<Pending::Out>();
  o->bytes = std::move(bytes);
  o->count = o->bytes->size();
  const int tag = letter_tag(label);
  o->requests.emplace_back();
  FLEXTP_MPI(MPI_Isend(&o->count, 8, MPI_BYTE, to, tag, p_->comm, &o->requests.back()));
  in_pieces(const_cast<char*>(o->bytes->data()), o->count, o->requests, [&](char* at, int n, MPI_Request* r) {
    FLEXTP_MPI(MPI_Isend(at, n, MPI_BYTE, to, tag, p_->comm, r));
  });
  p_->out.push_back(std::move(o));
}

void ByteMail::expect(int from, int label) {
  auto i = std::make_unique<Pending::In>();
  i->from = from, i->label = label;
  i->requests.emplace_back();
  FLEXTP_MPI(MPI_Irecv(&i->count, 8, MPI_BYTE, from, letter_tag(label), p_->comm, &i->requests.back()));
  p_->in.push_back(std::move(i));
}

std::vector<ByteMail::Letter> ByteMail::progress() {
  std::vector<Letter> arrived;
  for (size_t k = 0; k < p_->out.size();) {
    if (all_done(p_->out[k]->requests))
      p_->out.erase(p_->out.begin() + k);
    else
      ++k;
  }
  for (size_t k = 0; k < p_->in.size();) {
    Pending::In& i = *p_->in[k];
    bool done = all_done(i.requests);
    if (done && !i.sized) {  // the size came: now the pieces, in the order they were sent
      i.sized = true;
      i.requests.clear();
      i.bytes.resize(i.count);
      const int tag = letter_tag(i.label);
      in_pieces(i.bytes.data(), i.count, i.requests, [&](char* at, int n, MPI_Request* r) {
        FLEXTP_MPI(MPI_Irecv(at, n, MPI_BYTE, i.from, tag, p_->comm, r));
      });
      done = all_done(i.requests);
    }
    if (done) {
      arrived.push_back({i.from, i.label, std::move(i.bytes)});
      p_->in.erase(p_->in.begin() + k);
    } else {
      ++k;
    }
  }
  return arrived;
}

std::vector<ByteMail::Letter> ByteMail::finish() {
  std::vector<Letter> arrived;
  while (!idle()) {
    for (Letter& l : progress()) arrived.push_back(std::move(l));
    if (!idle()) std::this_thread::sleep_for(std::chrono::microseconds(200));  // not a busy spin on shared cores
  }
  return arrived;
}

}  // namespace flextp
