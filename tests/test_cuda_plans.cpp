// The layout logic of the CUDA backend, checked on the CPU: the row-major to column-major mapping
// of every cuBLAS call, and the steps of the GPU attention (core/cuda/attention_plan.h), run here
// with a reference column-major GEMM (cuBLAS's definition) and reference kernels, against the CPU
// ops. These need no GPU; the kernels themselves are checked on one (tests/gradcheck.h).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/cuda/attention_plan.h"
#include "core/cuda/blas.h"
#include "core/cuda/indexing.h"
#include "core/ops/attention.h"
#include "core/ops/elementwise.h"
#include "core/ops/matmul.h"
#include "tests/attention_reference.h"
#include "tests/gradcheck.h"

using namespace flextp;
using cuda::RowOperand;

namespace {

// cublasGemmStridedBatched's definition: column-major, element (r, c) of A at a[r + c * lda].
template <typename T>
void column_major_gemm(const cuda::ColumnMajorGemm<T>& g, T* c, int64_t batch, T alpha, T beta) {
  for (int64_t s = 0; s < batch; ++s)
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j) {
        T sum = 0;
        for (int64_t p = 0; p < g.k; ++p) {
          T a = g.trans_a ? g.a[s * g.stride_a + p + i * g.lda] : g.a[s * g.stride_a + i + p * g.lda];
          T b = g.trans_b ? g.b[s * g.stride_b + j + p * g.ldb] : g.b[s * g.stride_b + p + j * g.ldb];
          sum += a * b;
        }
        T& out = c[s * g.stride_c + i + j * g.ldc];
        out = alpha * sum + (beta == T(0) ? T(0) : beta * out);
      }
}

// The CUDA attention's backend, with the kernels written as plain loops.
struct ReferenceBackend {
  template <typename T>
  void gemm(int64_t m, int64_t n, int64_t k, RowOperand<T> a, RowOperand<T> b, T* c, int64_t ldc,
            int64_t stride_c, int64_t batch, T alpha, T beta) {
    column_major_gemm(cuda::as_column_major(m, n, k, a, b, ldc, stride_c), c, batch, alpha, beta);
  }
  template <typename T>
  void causal_softmax(T* s, int64_t rows, int64_t t, T scale, T* lse) {
    for (int64_t r = 0; r < rows; ++r) {
      T* row = s + r * t;
      int64_t i = r % t;
      T m = -INFINITY, sum = 0;
      for (int64_t j = 0; j <= i; ++j) m = std::max(m, row[j] * scale);
      for (int64_t j = 0; j <= i; ++j) sum += std::exp(row[j] * scale - m);
      for (int64_t j = 0; j < t; ++j) row[j] = j <= i ? std::exp(row[j] * scale - m) / sum : T(0);
      lse[r] = m + std::log(sum);
    }
  }
  template <typename T>
  void recompute_probs(T* s, int64_t rows, int64_t t, T scale, const T* lse) {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < t; ++j) s[r * t + j] = j <= r % t ? std::exp(s[r * t + j] * scale - lse[r]) : T(0);
  }
  template <typename T>
  void scores_grad(const T* p, T* dp, const T* o, const T* dout, int64_t rows, int64_t t, int64_t d,
                   int64_t out_stride, T scale) {
    for (int64_t r = 0; r < rows; ++r) {
      int64_t h = r / t, i = r % t;
      T di = 0;
      for (int64_t c = 0; c < d; ++c) di += o[i * out_stride + h * d + c] * dout[i * out_stride + h * d + c];
      for (int64_t j = 0; j < t; ++j) dp[r * t + j] = p[r * t + j] * (dp[r * t + j] - di) * scale;
    }
  }
};

}  // namespace

TEST_CASE("cuBLAS calls of matmul: the column-major mapping gives the row-major product") {
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (int64_t batch : {1, 3}) {
        INFO("trans_a ", ta, " trans_b ", tb, " batch ", batch);
        int64_t m = 4, n = 5, k = 3;
        Shape sa = ta ? Shape{k, m} : Shape{m, k}, sb = tb ? Shape{n, k} : Shape{k, n};
        if (batch > 1) sa.insert(sa.begin(), batch), sb.insert(sb.begin(), batch);
        Tensor a = Tensor::randn(sa, 1, 0, 0, 1, DType::F64), b = Tensor::randn(sb, 2, 0, 0, 1, DType::F64);
        Tensor expected = matmul(a, b, ta, tb);
        std::vector<double> c(batch * m * n, 7.0);
        auto call = cuda::matmul_call(a.data<double>(), b.data<double>(), m, n, k, ta, tb);
        column_major_gemm(cuda::as_column_major(m, n, k, call.a, call.b, call.ldc, call.stride_c), c.data(),
                          batch, 1.0, 0.0);
        test::check_values(expected, c, 1e-12);
        // accumulate: beta 1 adds to what is there
        std::vector<double> twice = c;
        column_major_gemm(cuda::as_column_major(m, n, k, call.a, call.b, call.ldc, call.stride_c), twice.data(),
                          batch, 1.0, 1.0);
        for (size_t i = 0; i < c.size(); ++i) CHECK(twice[i] == doctest::Approx(2 * c[i]));
      }
}

TEST_CASE("the GPU attention's steps equal the CPU attention, forward and backward") {
  for (int64_t heads : {1, 3}) {
    INFO(heads, " heads");
    int64_t t = 6;
    test::AttentionReference ref(2, t, heads, 4, 3);
    const Tensor &qkv = ref.qkv, &dout = ref.dout, &out = ref.out, &lse = ref.lse, &dqkv = ref.dqkv;
    cuda::AttentionLayout L = ref.layout();
    ReferenceBackend be;
    std::vector<double> o(out.numel(), -1.0), l(lse.numel(), -1.0), dq(dqkv.numel(), -1.0);
    std::vector<double> s1(heads * t * t), s2(heads * t * t);
    cuda::attention_forward_plan<double>(be, L, qkv.data<double>(), o.data(), l.data(), s1.data());
    test::check_values(out, o, 1e-12);
    test::check_values(lse, l, 1e-12);
    cuda::attention_backward_plan<double>(be, L, qkv.data<double>(), o.data(), l.data(), dout.data<double>(),
                                          dq.data(), s1.data(), s2.data());
    test::check_values(dqkv, dq, 1e-10);
  }
}

TEST_CASE("the pack kernel's part lookup and the column sums' row chunks") {
  std::vector<uint64_t> start{0, 3, 4, 10};  // parts of 3, 1, 6 and (to the end) elements
  std::vector<int> expect{0, 0, 0, 1, 2, 2, 2, 2, 2, 2, 3, 3};
  for (uint64_t i = 0; i < expect.size(); ++i) CHECK(cuda::part_of(start.data(), 4, i) == expect[i]);
  CHECK(cuda::part_of(start.data(), 1, 5) == 0);
  for (size_t rows : {size_t{0}, size_t{1}, size_t{63}, size_t{64}, size_t{65}, size_t{1000}, size_t{16384},
                      size_t{32769}, size_t{1000003}}) {
    INFO(rows, " rows");
    cuda::RowChunks c = cuda::row_chunks(rows);
    CHECK(c.chunks >= 1);
    CHECK(c.chunks <= 512);
    CHECK(c.chunks * c.per >= rows);                    // every row covered
    if (rows > 0) CHECK((c.chunks - 1) * c.per < rows);  // no empty chunk
  }
}

TEST_CASE("a bf16 copy of a GEMM operand spans every element the GEMM reads") {
  struct Case {
    int64_t rows, cols, batch, ld, stride;
    bool trans;
  };
  // Plain and transposed matmul operands, a weight broadcast over the batch (stride 0), and the
  // attention's k read in place in the packed qkv (3 heads of d 4: stride 12, ld 36).
  for (Case c : {Case{5, 3, 1, 3, 15, false}, Case{5, 3, 4, 5, 15, true}, Case{2, 7, 3, 7, 0, false},
                 Case{6, 4, 3, 36, 12, true}, Case{6, 4, 3, 36, 12, false}, Case{0, 4, 3, 4, 0, false}}) {
    INFO(c.rows, "x", c.cols, " batch ", c.batch, " ld ", c.ld, " stride ", c.stride, " trans ", c.trans);
    cuda::RowOperand<float> o{nullptr, c.ld, c.stride, c.trans};
    int64_t last = -1;
    for (int64_t s = 0; s < c.batch; ++s)
      for (int64_t r = 0; r < c.rows; ++r)
        for (int64_t k = 0; k < c.cols; ++k) {  // element (r, k) of op(stored)
          int64_t at = s * c.stride + (c.trans ? k * c.ld + r : r * c.ld + k);
          last = std::max(last, at);
        }
    CHECK(cuda::operand_span(o, c.rows, c.cols, c.batch) == last + 1);
  }
}
