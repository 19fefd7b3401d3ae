// A build without MPI (FLEXTP_MPI=OFF, or no MPI found when configuring: the lent GPU machines)
// runs as one process. Started by an MPI launcher, it says so and stops: the ranks would
// otherwise each train alone, believing themselves the whole job.
#include <cstdio>
#include <cstdlib>

#include "core/error.h"
#include "parallel/comm/byte_mail.h"
#include "parallel/comm/mpi_communicator.h"

namespace flextp {

namespace {
constexpr const char* kNoMpi =
    "this flextp build has no MPI (configured with FLEXTP_MPI=OFF or without an MPI library): it runs as "
    "one process; rebuild with MPI to run several ranks";
}

MpiRuntime::MpiRuntime(int*, char***) {
  // Called first thing in main, before any error handling: report and stop here.
  std::fprintf(stderr, "error: started by an MPI launcher, but %s\n", kNoMpi);
  std::exit(1);
}
MpiRuntime::~MpiRuntime() = default;
void MpiRuntime::abort_all(int code) { std::exit(code); }
bool MpiRuntime::active() { return false; }

std::unique_ptr<Communicator> make_mpi_communicator(int) { FLEXTP_FAIL(kNoMpi); }
int mpi_ranks_on_this_node() { return 1; }
std::vector<std::string> mpi_place_ranks(bool) { FLEXTP_FAIL(kNoMpi); }
int mpi_place_key() { return 0; }

struct ByteMail::Pending {};
ByteMail::ByteMail() { FLEXTP_FAIL(kNoMpi); }
ByteMail::~ByteMail() = default;
int ByteMail::rank() const { return 0; }
int ByteMail::size() const { return 1; }
std::vector<std::string> ByteMail::all_gather(const std::string& mine) { return {mine}; }
void ByteMail::barrier() {}
void ByteMail::send(int, int, std::shared_ptr<const std::string>) { FLEXTP_FAIL(kNoMpi); }
void ByteMail::expect(int, int) { FLEXTP_FAIL(kNoMpi); }
std::vector<ByteMail::Letter> ByteMail::progress() { return {}; }
std::vector<ByteMail::Letter> ByteMail::finish() { return {}; }
bool ByteMail::idle() const { return true; }
void ByteMail::set_piece_bytes(int64_t) {}

}  // namespace flextp
