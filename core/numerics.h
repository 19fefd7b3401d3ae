#pragma once
// How the GPU computes an f32 model: a plain value, passed explicitly rather than set process-wide,
// so that two models (or a test and the model it checks) can use different settings in one process
// and a backward always runs with the settings of its forward.
//
// The model holds one (Module::set_numerics hands it to every layer; train sets it once from its
// options) and each layer passes it to the ops that read it: matmul (core/ops/matmul.h) and
// attention (core/ops/attention.h), which record it for their backward. The CPU kernels compute in
// full precision and ignore it. The default is plain f32 everywhere.
#include <string>

namespace flextp {

// How f32 matmuls use the tensor cores: not at all (f32), TF32 (10-bit mantissa inputs), or bf16
// (the operands rounded to bf16 on the fly; the weights, activations and optimizer state stay
// f32). Sums and results are f32 in all three.
enum class MatmulPrecision { f32, tf32, bf16 };

struct Numerics {
  MatmulPrecision matmul = MatmulPrecision::f32;
  // Attention on cuDNN's fused flash attention in bf16 (core/cuda/cudnn_attention.h) rather than
  // on the own f32 kernels; calls cuDNN cannot take fall back to the own kernels.
  bool cudnn_attention = false;
};

// The precision of the two switches tf32 and bf16 (bf16 wins; train refuses both at once).
inline MatmulPrecision matmul_precision_of(bool tf32, bool bf16) {
  return bf16 ? MatmulPrecision::bf16 : tf32 ? MatmulPrecision::tf32 : MatmulPrecision::f32;
}
// "fp32", "tf32" or "bf16": the precision's usual name, and what bench/torch_gpt.py takes.
inline const char* precision_name(MatmulPrecision p) {
  return p == MatmulPrecision::bf16 ? "bf16" : p == MatmulPrecision::tf32 ? "tf32" : "fp32";
}
// The numerics of a matmul precision and an attention choice: "cudnn", "own", or "auto" (cuDNN
// exactly when the matmuls are bf16, the precision cuDNN's attention takes).
inline Numerics numerics_of(MatmulPrecision matmul, const std::string& attention) {
  return {matmul, attention == "cudnn" || (attention == "auto" && matmul == MatmulPrecision::bf16)};
}

}  // namespace flextp
