#pragma once
// MFU (model FLOPs utilisation): the model FLOPs a run does per second over the peak FLOP/s of
// its hardware (core/peak_flops.h). The model FLOPs of training are counted as llm.c and PaLM
// count them: per token, 6 per parameter (2 in the forward and 4 in the backward of every weight,
// the tied LM head included) plus 12 L T C for the attention (QK^T and the weighting of V, 2 L T C
// each in the forward and twice that in the backward, over the whole T x T square as PaLM counts
// it, though the causal mask needs half). train's log, bench_train_throughput and bench_ops all
// count with training_flops_per_token.
#include <cstdint>

#include "core/peak_flops.h"

namespace flextp {

class GPT;

inline double training_flops_per_token(double parameters, int64_t n_layer, int64_t seq_len, int64_t n_embd) {
  return 6.0 * parameters +
         12.0 * static_cast<double>(n_layer) * static_cast<double>(seq_len) * static_cast<double>(n_embd);
}

// The whole model's parameters (every rank's units, the padded vocabulary rows included).
int64_t model_parameters(GPT& model);

// Of `model` trained on sequences of `seq_len` tokens.
double training_flops_per_token(GPT& model, int64_t seq_len);

// What a run's MFU is measured with.
struct MfuBasis {
  double flops_per_token = 0;
  PeakFlops peak;  // peak.flops_per_s 0: unknown, so no MFU
};

// For a job of `ranks` ranks training `model` on `device` (rank 0's): on the CPU this measures
// the FMA peak (about 0.1 s), so only the rank that prints calls it.
MfuBasis mfu_basis(GPT& model, int64_t seq_len, Device device, MatmulPrecision precision, int ranks);

}  // namespace flextp
