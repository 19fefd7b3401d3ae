#pragma once
// What the files that call MPI share (mpi_communicator.cpp, byte_mail.cpp; defined in the first):
// a failed call as an exception that names it, and a size checked to fit MPI's int counts.
#include <cstdint>

namespace flextp {

void check_mpi(int rc, const char* call);
#define FLEXTP_MPI(call) ::flextp::check_mpi((call), #call)
int as_count(int64_t n, const char* what);

}  // namespace flextp
