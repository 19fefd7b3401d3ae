#include "parallel/comm/rank_agreement.h"

#include "core/error.h"

namespace flextp {

uint64_t fingerprint(const void* bytes, size_t n, uint64_t hash) {
  const unsigned char* p = static_cast<const unsigned char*>(bytes);
  for (size_t i = 0; i < n; ++i) hash = (hash ^ p[i]) * 0x100000001b3ull;
  return hash;
}

void check_ranks_agree(Communicator& comm, const std::vector<Fingerprint>& mine) {
  const int64_t n = static_cast<int64_t>(mine.size());
  Tensor local = Tensor::empty({2 * n}, DType::I32);  // each hash as two 32-bit halves
  int32_t* halves = local.data<int32_t>();
  for (int64_t i = 0; i < n; ++i) {
    halves[2 * i] = static_cast<int32_t>(static_cast<uint32_t>(mine[i].hash >> 32));
    halves[2 * i + 1] = static_cast<int32_t>(static_cast<uint32_t>(mine[i].hash));
  }
  Tensor all = Tensor::empty({comm.size() * 2 * n}, DType::I32);
  comm.all_gather(local, all);
  const int32_t* got = all.data<int32_t>();
  std::string differences;
  for (int64_t i = 0; i < n; ++i) {
    std::string ranks;
    int count = 0;
    for (int r = 1; r < comm.size(); ++r)
      if (got[r * 2 * n + 2 * i] != got[2 * i] || got[r * 2 * n + 2 * i + 1] != got[2 * i + 1])
        ranks += (count++ ? ", " : "") + std::to_string(r);
    if (count)
      differences += (differences.empty() ? "" : "; ") + mine[i].what + " differs between rank 0 and " +
                     (count == 1 ? "rank " : "ranks ") + ranks;
  }
  FLEXTP_CHECK(differences.empty(), "the ranks did not read the same inputs: ", differences,
               ". Every rank must see the same files (node-local copies that differ?)");
}

}  // namespace flextp
