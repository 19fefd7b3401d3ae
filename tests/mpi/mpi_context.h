#pragma once
// The world communicator for the multi-rank tests, and a temporary directory all ranks share.
#include <optional>
#include <string>
#include <vector>

#include "parallel/comm/communicator.h"
#include "parallel/comm/mpi_communicator.h"
#include "tests/temp_dir.h"

namespace flextp::test {

inline Communicator& world() {
  static std::unique_ptr<Communicator> comm = make_mpi_communicator();
  return *comm;
}

// A fresh directory made by rank 0 (named by its process id, so every run has its own) and
// known to every rank; removed when rank 0's copy goes. Every rank must construct it.
struct SharedTempDir {
  std::optional<TempDir> owned;  // rank 0 only
  std::string path;
  explicit SharedTempDir(const std::string& tag) {
    Communicator& comm = world();
    std::vector<int32_t> chars(4096, 0);
    if (comm.rank() == 0) {
      owned.emplace(tag);
      path = owned->path.string();
      FLEXTP_CHECK(path.size() < chars.size(), "SharedTempDir: path too long: ", path);
      std::copy(path.begin(), path.end(), chars.begin());
    }
    Tensor t = Tensor::from_vector(chars, {static_cast<int64_t>(chars.size())});
    comm.broadcast(t, 0);
    path.clear();
    for (int32_t ch : t.to_vector<int32_t>()) {
      if (ch == 0) break;
      path.push_back(static_cast<char>(ch));
    }
  }
  ~SharedTempDir() { world().barrier(); }  // nobody still reads when rank 0 removes it
  std::string file(const std::string& name) const { return path + "/" + name; }
};

}  // namespace flextp::test
