#include "core/cuda/sdpa_graph.h"

#include <cmath>
#include <limits>

#include "core/error.h"

namespace flextp::cuda::sdpa {
namespace {

struct Dims {
  int64_t d[4];
};

// Packed strides of dims, last axis fastest.
Dims packed(const Dims& dims) {
  Dims s;
  s.d[3] = 1;
  for (int i = 2; i >= 0; --i) s.d[i] = s.d[i + 1] * dims.d[i + 1];
  return s;
}

class Builder {
 public:
  explicit Builder(const AttentionLayout& L) : L_(L) {}

  int64_t tensor(int64_t uid, Dims dims, Dims strides, Type type, bool is_virtual = false) {
    GraphTensor t{uid, {}, {}, type, is_virtual, false, 0.f};
    for (int i = 0; i < 4; ++i) t.dims[i] = dims.d[i], t.strides[i] = strides.d[i];
    g_.tensors.push_back(t);
    return uid;
  }
  int64_t scalar(int64_t uid, float value) {
    GraphTensor t{uid, {1, 1, 1, 1}, {1, 1, 1, 1}, Type::f32, false, true, value};
    g_.tensors.push_back(t);
    return uid;
  }
  int64_t virt(Dims dims, Type type = Type::f32) { return virt(dims, packed(dims), type); }
  int64_t virt(Dims dims, Dims strides, Type type) { return tensor(next_++, dims, strides, type, true); }
  int64_t virt_like(int64_t uid, Type type = Type::f32) {
    const GraphTensor& t = g_.tensor(uid);
    return tensor(next_++, {{t.dims[0], t.dims[1], t.dims[2], t.dims[3]}},
                  {{t.strides[0], t.strides[1], t.strides[2], t.strides[3]}}, type, true);
  }

  // The per-head views into the packed layouts (core/ops/attention.h): in qkv, head h's q, k, v
  // are 3D columns apart in a row of width qkv_stride; k^T and v^T swap the last two axes.
  Dims bhtd() const { return {{L_.b, L_.h, L_.t, L_.d}}; }
  Dims bhdt() const { return {{L_.b, L_.h, L_.d, L_.t}}; }
  Dims qkv_strides() const { return {{L_.t * L_.qkv_stride, 3 * L_.d, L_.qkv_stride, 1}}; }
  Dims qkv_strides_t() const { return {{L_.t * L_.qkv_stride, 3 * L_.d, 1, L_.qkv_stride}}; }
  Dims out_strides() const { return {{L_.t * L_.out_stride, L_.d, L_.out_stride, 1}}; }
  Dims scores() const { return {{L_.b, L_.h, L_.t, L_.t}}; }
  Dims rows() const { return {{L_.b, L_.h, L_.t, 1}}; }

  // The tensors both directions bind: q, k^T, out, the log-sum-exp statistics and the scalars.
  int64_t q() { return tensor(kQ, bhtd(), qkv_strides(), Type::io); }
  int64_t kt() { return tensor(kK, bhdt(), qkv_strides_t(), Type::io); }
  int64_t o() { return tensor(kO, bhtd(), out_strides(), Type::io); }
  int64_t stats() { return tensor(kStats, rows(), packed(rows()), Type::f32); }
  int64_t scale() { return scalar(kScale, 1.f / std::sqrt(static_cast<float>(L_.d))); }
  int64_t neg_inf() { return scalar(kNegInf, std::numeric_limits<float>::lowest()); }

  int64_t matmul(int64_t a, int64_t b, int64_t c) {
    GraphOp op{OpKind::matmul};
    op.in0 = a, op.in1 = b, op.out = c;
    g_.ops.push_back(op);
    return c;
  }
  int64_t pointwise(Pointwise mode, int64_t a, int64_t b, int64_t out) {
    GraphOp op{OpKind::pointwise};
    op.pointwise = mode, op.in0 = a, op.in1 = b, op.out = out;
    g_.ops.push_back(op);
    return out;
  }
  // A pointwise op whose output is a new f32 virtual tensor shaped like `a`.
  int64_t pointwise(Pointwise mode, int64_t a, int64_t b = 0) { return pointwise(mode, a, b, virt_like(a)); }
  int64_t reduce(Reduce mode, int64_t in, int64_t out) {
    GraphOp op{OpKind::reduction};
    op.reduce = mode, op.in0 = in, op.out = out;
    g_.ops.push_back(op);
    return out;
  }
  int64_t reshape(int64_t in, int64_t out) {
    GraphOp op{OpKind::reshape};
    op.in0 = in, op.out = out;
    g_.ops.push_back(op);
    return out;
  }

  // Scores above the diagonal (key after query) are replaced by the lowest float, so that their
  // exponentials vanish without an infinity that could meet another in a subtraction.
  int64_t causal_mask(int64_t s, int64_t neg_inf) {
    GraphOp row{OpKind::pointwise};
    row.pointwise = Pointwise::gen_index, row.axis = 2, row.compute = Type::i32, row.in0 = s;
    row.out = virt_like(s, Type::i32);
    g_.ops.push_back(row);
    GraphOp col = row;
    col.axis = 3, col.out = virt_like(s, Type::i32);
    g_.ops.push_back(col);
    GraphOp ge{OpKind::pointwise};
    ge.pointwise = Pointwise::cmp_ge, ge.compute = Type::boolean, ge.in0 = row.out, ge.in1 = col.out;
    ge.out = virt_like(s, Type::boolean);
    g_.ops.push_back(ge);
    GraphOp select{OpKind::pointwise};
    select.pointwise = Pointwise::binary_select, select.in0 = s, select.in1 = neg_inf, select.in2 = ge.out;
    select.out = virt_like(s);
    g_.ops.push_back(select);
    return select.out;
  }

  Graph take() { return std::move(g_); }

 private:
  const AttentionLayout& L_;
  Graph g_;
  int64_t next_ = kFirstVirtual;
};

}  // namespace

const GraphTensor& Graph::tensor(int64_t uid) const {
  for (const GraphTensor& t : tensors)
    if (t.uid == uid) return t;
  throw Error("sdpa graph: no tensor with id " + std::to_string(uid));
}

namespace {
bool in_workspace(const GraphTensor& t) { return t.uid == kSoftmaxSum || t.uid == kDQAccum; }
// The f32 bytes a workspace tensor takes, rounded up so that the next one starts 256-byte aligned.
int64_t workspace_extent(const GraphTensor& t) {
  int64_t bytes = t.dims[0] * t.dims[1] * t.dims[2] * t.dims[3] * 4;
  return (bytes + 255) / 256 * 256;
}
}  // namespace

// The workspace tensors lie one after another, in the order the graph declares them.
int64_t Graph::workspace_offset(int64_t uid) const {
  int64_t offset = 0;
  for (const GraphTensor& t : tensors) {
    if (!in_workspace(t)) continue;
    if (t.uid == uid) return offset;
    offset += workspace_extent(t);
  }
  throw Error("sdpa graph: tensor " + std::to_string(uid) + " is not in the workspace");
}

int64_t Graph::workspace_bytes() const {
  int64_t bytes = 0;
  for (const GraphTensor& t : tensors)
    if (in_workspace(t)) bytes += workspace_extent(t);
  return bytes;
}

Graph forward_graph(const AttentionLayout& L) {
  Builder g(L);
  int64_t q = g.q(), kt = g.kt(), o = g.o(), stats = g.stats(), scale = g.scale(), neg_inf = g.neg_inf();
  int64_t v = g.tensor(kV, g.bhtd(), g.qkv_strides(), Type::io);

  int64_t s = g.matmul(q, kt, g.virt(g.scores()));
  s = g.pointwise(Pointwise::mul, s, scale);
  s = g.causal_mask(s, neg_inf);
  int64_t max = g.reduce(Reduce::max, s, g.virt(g.rows()));
  int64_t e = g.pointwise(Pointwise::exp, g.pointwise(Pointwise::sub, s, max));
  int64_t sum = g.reduce(Reduce::add, e, g.virt(g.rows()));
  g.pointwise(Pointwise::add, max, g.pointwise(Pointwise::log, sum), stats);
  // cuDNN takes the second matmul's A operand in the io type.
  int64_t p = g.pointwise(Pointwise::div, e, sum, g.virt(g.scores(), Type::io));
  g.matmul(p, v, o);
  return g.take();
}

Graph backward_graph(const AttentionLayout& L) {
  Builder g(L);
  int64_t q = g.q(), kt = g.kt(), o = g.o(), stats = g.stats(), scale = g.scale(), neg_inf = g.neg_inf();
  int64_t vt = g.tensor(kV, g.bhdt(), g.qkv_strides_t(), Type::io);
  int64_t d_o = g.tensor(kDO, g.bhtd(), g.out_strides(), Type::io);
  int64_t dq = g.tensor(kDQ, g.bhtd(), g.qkv_strides(), Type::io);
  int64_t dk = g.tensor(kDK, g.bhtd(), g.qkv_strides(), Type::io);
  int64_t dv = g.tensor(kDV, g.bhtd(), g.qkv_strides(), Type::io);
  int64_t one = g.scalar(kOne, 1.f);
  int64_t softmax_sum = g.tensor(kSoftmaxSum, g.rows(), packed(g.rows()), Type::f32);
  int64_t dq_accum = g.tensor(kDQAccum, g.bhtd(), packed(g.bhtd()), Type::f32);

  // softmax_sum = rowsum(dO * O), kept in the workspace for the dS step
  int64_t dot = g.pointwise(Pointwise::mul, d_o, o, g.virt(g.bhtd()));
  int64_t rowsum = g.reduce(Reduce::add, dot, g.virt(g.rows()));
  g.pointwise(Pointwise::mul, rowsum, one, softmax_sum);

  // P again, from the forward's statistics
  int64_t s = g.matmul(q, kt, g.virt(g.scores()));
  s = g.pointwise(Pointwise::mul, s, scale);
  s = g.pointwise(Pointwise::sub, s, stats);
  s = g.causal_mask(s, neg_inf);
  int64_t p = g.pointwise(Pointwise::exp, s);

  // dV = P^T dO: P^T is P read with its last two axes swapped
  Dims transposed_scores{{L.h * L.t * L.t, L.t * L.t, 1, L.t}};
  int64_t pt = g.reshape(p, g.virt(g.scores(), transposed_scores, Type::io));
  g.matmul(pt, d_o, dv);

  // dS = P (dO V^T - softmax_sum) scale
  int64_t dp = g.matmul(d_o, vt, g.virt(g.scores()));
  int64_t ds = g.pointwise(Pointwise::sub, dp, softmax_sum);
  ds = g.pointwise(Pointwise::mul, ds, p);
  ds = g.pointwise(Pointwise::mul, ds, scale);

  // dK = dS^T Q
  int64_t dst = g.reshape(ds, g.virt(g.scores(), transposed_scores, Type::io));
  g.matmul(dst, q, dk);

  // dQ = dS K, accumulated in f32 and then converted to the io type
  int64_t k = g.reshape(kt, g.virt(g.bhtd(), g.qkv_strides(), Type::io));
  g.matmul(ds, k, dq_accum);
  g.pointwise(Pointwise::identity, dq_accum, 0, dq);
  return g.take();
}

bool supported(const AttentionLayout& L, int64_t cudnn_version, std::string* why) {
  auto no = [&](const std::string& reason) {
    if (why) *why = reason;
    return false;
  };
  if (cudnn_version < 90000) return no("cuDNN 9 or newer is needed, found " + std::to_string(cudnn_version));
  if (cudnn_version == 91000 || cudnn_version == 91001)
    return no("cuDNN 9.10.0 and 9.10.1 have known faults in bf16 attention; 9.10.2 or newer is needed");
  if (L.b < 1 || L.h < 1 || L.t < 1) return no("empty attention");
  if (L.d % 8 != 0 || L.d > 128)
    return no("head size " + std::to_string(L.d) + " is not a multiple of 8 up to 128");
  // Before 9.16 cuDNN's backward needs a padding mask when the sequence is not a multiple of 128.
  if (cudnn_version < 91600 && L.t % 128 != 0)
    return no("sequence length " + std::to_string(L.t) + " is not a multiple of 128 (cuDNN before 9.16)");
  return true;
}

}  // namespace flextp::cuda::sdpa
