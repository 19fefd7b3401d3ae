#include "parallel/comm/rank_agreement.h"

#include <cstring>

#include "core/error.h"

namespace flextp {

namespace {
constexpr uint64_t kFnvPrime = 0x100000001b3ull, kMul1 = 0x9e3779b97f4a7c15ull, kMul2 = 0xc2b2ae3d27d4eb4full;
uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
// One 8-byte word into a lane: every step is invertible, so a word that differs changes the lane.
uint64_t round(uint64_t lane, uint64_t word) { return rotl(lane + word * kMul2, 31) * kMul1; }
}  // namespace

uint64_t fingerprint(const void* bytes, size_t n, uint64_t hash) {
  const unsigned char* p = static_cast<const unsigned char*>(bytes);
  size_t i = 0;
  // 32-byte blocks in four lanes of 8-byte words: the lanes' multiplications overlap, several
  // bytes a cycle where FNV-1a's one chain of multiplies took a few cycles a byte (the replicas'
  // weight check hashes every weight and optimizer slot: 1.5 GB for GPT-2 small).
  if (n >= 32) {
    uint64_t lane[4] = {hash ^ kMul1, hash ^ kMul2, hash + kMul1, hash - kMul2};
    for (; i + 32 <= n; i += 32)
      for (int k = 0; k < 4; ++k) {
        uint64_t word;
        std::memcpy(&word, p + i + 8 * k, sizeof word);
        lane[k] = round(lane[k], word);
      }
    for (uint64_t l : lane) hash = rotl(hash ^ round(0, l), 27) * kMul1 + kMul2;
  }
  for (; i < n; ++i) hash = (hash ^ p[i]) * kFnvPrime;  // the tail, FNV-1a
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
