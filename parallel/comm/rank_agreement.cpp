#include "parallel/comm/rank_agreement.h"

#include "core/error.h"

namespace flextp {

uint64_t fingerprint(const void* bytes, size_t n, uint64_t hash) {
  const unsigned char* p = static_cast<const unsigned char*>(bytes);
  for (size_t i = 0; i < n; ++i) hash = (hash ^ p[i]) * 0x100000001b3ull;
  return hash;
}

std::vector<std::string> ranks_differing_from_first(Communicator& comm, const std::vector<uint64_t>& hashes) {
  const int64_t n = static_cast<int64_t>(hashes.size());
  Tensor local = Tensor::empty({2 * n}, DType::I32);  // each hash as two 32-bit halves
  int32_t* halves = local.data<int32_t>();
  for (int64_t i = 0; i < n; ++i) {
    halves[2 * i] = static_cast<int32_t>(static_cast<uint32_t>(hashes[i] >> 32));
    halves[2 * i + 1] = static_cast<int32_t>(static_cast<uint32_t>(hashes[i]));
  }
  Tensor all = Tensor::empty({comm.size() * 2 * n}, DType::I32);
  comm.all_gather(local, all);
  const int32_t* got = all.data<int32_t>();
  std::vector<std::string> differing(n);
  for (int64_t i = 0; i < n; ++i)
    for (int r = 1; r < comm.size(); ++r)
      if (got[r * 2 * n + 2 * i] != got[2 * i] || got[r * 2 * n + 2 * i + 1] != got[2 * i + 1])
        differing[i] += (differing[i].empty() ? "" : ", ") + std::to_string(r);
  return differing;
}

void check_ranks_agree(Communicator& comm, const std::vector<Fingerprint>& mine) {
  std::vector<uint64_t> hashes;
  for (const Fingerprint& f : mine) hashes.push_back(f.hash);
  std::vector<std::string> differing = ranks_differing_from_first(comm, hashes);
  std::string differences;
  for (size_t i = 0; i < mine.size(); ++i)
    if (!differing[i].empty())
      differences += (differences.empty() ? "" : "; ") + mine[i].what + " differs between rank 0 and " +
                     (differing[i].find(',') == std::string::npos ? "rank " : "ranks ") + differing[i];
  FLEXTP_CHECK(differences.empty(), "the ranks did not read the same inputs: ", differences,
               ". Every rank must see the same files (node-local copies that differ?)");
}

}  // namespace flextp
