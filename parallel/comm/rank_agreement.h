#pragma once
// Every rank of a job reads its own data, vocabulary and checkpoint. Files that differ between
// nodes would make the ranks train different models without a word, or wait forever in unequal
// numbers of collectives; before training they compare fingerprints of what they read instead.
#include <cstdint>
#include <string>
#include <vector>

#include "parallel/comm/communicator.h"

namespace flextp {

// 64 bits of `n` bytes: 32-byte blocks in four lanes of multiply-rotate rounds, the tail by
// FNV-1a. `hash` continues an earlier one (the same bytes in the same pieces, the same hash).
uint64_t fingerprint(const void* bytes, size_t n, uint64_t hash = 0xcbf29ce484222325ull);
inline uint64_t fingerprint(const std::string& s, uint64_t hash = 0xcbf29ce484222325ull) {
  return fingerprint(s.data(), s.size(), hash);
}

struct Fingerprint {
  std::string what;  // "the training data", ...
  uint64_t hash;
};

// Collective: every rank passes as many hashes. For each hash, the ranks (of `comm`) whose hash
// differs from rank 0's, comma-separated ("" where all agree).
std::vector<std::string> ranks_differing_from_first(Communicator& comm, const std::vector<uint64_t>& hashes);

// Collective: every rank passes the same list (the same `what`s in the same order). Throws on
// every rank, naming each fingerprint that differs from rank 0's and the ranks whose differ.
void check_ranks_agree(Communicator& comm, const std::vector<Fingerprint>& mine);

}  // namespace flextp
