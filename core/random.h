#pragma once
// Counter-based random numbers (Philox-4x32-10): the value of element i depends only on
// (seed, stream, i), never on the order of generation, so the CPU and the GPU produce the same
// numbers, and a slice of a tensor can be generated without generating the rest.
#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define FLEXTP_HD __host__ __device__ __forceinline__
#else
#define FLEXTP_HD inline
#endif

namespace flextp::rng {

struct Philox4 {
  uint32_t v[4];
};

FLEXTP_HD void mulhilo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  uint64_t p = static_cast<uint64_t>(a) * b;
  hi = static_cast<uint32_t>(p >> 32);
  lo = static_cast<uint32_t>(p);
}

FLEXTP_HD Philox4 philox(uint64_t counter, uint64_t stream, uint64_t seed) {
  uint32_t c0 = static_cast<uint32_t>(counter), c1 = static_cast<uint32_t>(counter >> 32);
  uint32_t c2 = static_cast<uint32_t>(stream), c3 = static_cast<uint32_t>(stream >> 32);
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, lo0, hi1, lo1;
    mulhilo(0xD2511F53u, c0, hi0, lo0);
    mulhilo(0xCD9E8D57u, c2, hi1, lo1);
    uint32_t n0 = hi1 ^ c1 ^ k0, n1 = lo1, n2 = hi0 ^ c3 ^ k1, n3 = lo0;
    c0 = n0; c1 = n1; c2 = n2; c3 = n3;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return {{c0, c1, c2, c3}};
}

// Uniform in [0, 1) with 24 random bits (exactly representable in float).
FLEXTP_HD double to_unit(uint32_t x) { return (x >> 8) * (1.0 / 16777216.0); }

FLEXTP_HD double uniform(uint64_t i, uint64_t stream, uint64_t seed) {
  return to_unit(philox(i, stream, seed).v[0]);
}

// Standard normal by Box-Muller, computed in double so both devices round to the same float.
FLEXTP_HD double normal(uint64_t i, uint64_t stream, uint64_t seed) {
  Philox4 r = philox(i, stream, seed);
  double u1 = ((r.v[0] >> 8) + 1) * (1.0 / 16777216.0);  // (0, 1]: log is finite
  double u2 = to_unit(r.v[1]);
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

// A stable 64-bit stream id from a name (FNV-1a), e.g. per parameter for initialisation.
inline uint64_t stream_id(const char* name) {
  uint64_t h = 1469598103934665603ull;
  for (const char* p = name; *p; ++p) h = (h ^ static_cast<unsigned char>(*p)) * 1099511628211ull;
  return h;
}

}  // namespace flextp::rng
