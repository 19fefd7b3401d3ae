#pragma once
// Messages of bytes between the world's ranks (in placed order: parallel/comm/mpi_communicator.h
// mpi_place_ranks) beside the collectives, on an MPI communicator of their own: a snapshot's copy
// to another host travels while the next steps compute (train/snapshots.h). Every world rank makes
// one, at the same point. A build without MPI refuses to make one (parallel/comm/mpi_stub.cpp).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace flextp {

class ByteMail {
 public:
  ByteMail();
  ~ByteMail();
  int rank() const;
  int size() const;
  // Collectives: every rank's `mine`, in rank order; a barrier.
  std::vector<std::string> all_gather(const std::string& mine);
  void barrier();
  struct Letter {
    int from, label;
    std::string bytes;
  };
  // Starts sending `bytes` to rank `to`; expects one message (of any size) from rank `from`. The
  // label (0 to 30000) tells a sender's messages apart, whatever order they arrive in.
  void send(int to, int label, std::shared_ptr<const std::string> bytes);
  void expect(int from, int label);
  // Moves what can move without waiting; returns the messages that arrived since the last call.
  std::vector<Letter> progress();
  // Waits until everything sent has left and everything expected has arrived; returns those.
  std::vector<Letter> finish();
  bool idle() const;
  // A message travels in pieces of at most this many bytes (1 GiB; an MPI count is an int).
  // Tests make it small.
  static void set_piece_bytes(int64_t bytes);

 private:
  struct Pending;
  std::unique_ptr<Pending> p_;
};

}  // namespace flextp
