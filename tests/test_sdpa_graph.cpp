// cuDNN's flash-attention graph (core/cuda/sdpa_graph.h), checked on the CPU: an interpreter runs
// each of its operations by its cuDNN definition over the graph's own dims and strides, bound to
// the packed qkv, out and lse buffers exactly as the GPU binds them, and the results must equal
// the CPU attention. No GPU and no cuDNN are needed; the cuDNN run itself is checked on a GPU
// (tests/test_ops.cpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "core/cuda/cudnn_attention.h"
#include "core/cuda/sdpa_graph.h"
#include "core/ops/attention.h"
#include "tests/attention_reference.h"
#include "tests/gradcheck.h"

using namespace flextp;
using namespace flextp::cuda::sdpa;

namespace {

// A tensor's elements: a view (base offset and the tensor's strides) into a shared buffer.
struct View {
  std::shared_ptr<std::vector<double>> mem;
  int64_t base = 0;
};

int64_t span(const GraphTensor& t) {
  int64_t n = 1;
  for (int i = 0; i < 4; ++i) n += (t.dims[i] - 1) * t.strides[i];
  return n;
}

class Interpreter {
 public:
  explicit Interpreter(const Graph& g) : g_(g) {}

  void bind(int64_t uid, std::shared_ptr<std::vector<double>> mem, int64_t base = 0) {
    const GraphTensor& t = g_.tensor(uid);
    REQUIRE(base + span(t) <= static_cast<int64_t>(mem->size()));
    views_[uid] = View{std::move(mem), base};
  }

  // q, k and v (or their gradients): D columns apart in each head's block of the packed layout.
  void bind_heads(std::initializer_list<int64_t> uids, const std::shared_ptr<std::vector<double>>& mem, int64_t d) {
    int64_t base = 0;
    for (int64_t uid : uids) bind(uid, mem, base), base += d;
  }

  void run() {
    for (const GraphTensor& t : g_.tensors) {
      if (t.by_value) views_[t.uid] = View{std::make_shared<std::vector<double>>(1, t.value), 0};
      else if (t.is_virtual) views_[t.uid] = View{std::make_shared<std::vector<double>>(span(t), NAN), 0};
    }
    for (const GraphOp& op : g_.ops) {
      switch (op.kind) {
        case OpKind::matmul: matmul(op); break;
        case OpKind::pointwise: pointwise(op); break;
        case OpKind::reduction: reduction(op); break;
        case OpKind::reshape: views_[op.out] = views_.at(op.in0); break;  // the same memory, read anew
      }
    }
  }

 private:
  // Element idx of tensor uid; axes of extent 1 broadcast.
  double& at(int64_t uid, const int64_t* idx) {
    const GraphTensor& t = g_.tensor(uid);
    View& v = views_.at(uid);
    int64_t off = v.base;
    for (int i = 0; i < 4; ++i) off += (t.dims[i] == 1 ? 0 : idx[i]) * t.strides[i];
    return (*v.mem)[off];
  }

  template <typename F>
  static void each(const int64_t* dims, F f) {
    int64_t i[4];
    for (i[0] = 0; i[0] < dims[0]; ++i[0])
      for (i[1] = 0; i[1] < dims[1]; ++i[1])
        for (i[2] = 0; i[2] < dims[2]; ++i[2])
          for (i[3] = 0; i[3] < dims[3]; ++i[3]) f(i);
  }

  void matmul(const GraphOp& op) {
    const GraphTensor &a = g_.tensor(op.in0), &b = g_.tensor(op.in1), &c = g_.tensor(op.out);
    REQUIRE(a.dims[3] == b.dims[2]);
    REQUIRE(c.dims[2] == a.dims[2]);
    REQUIRE(c.dims[3] == b.dims[3]);
    each(c.dims, [&](const int64_t* i) {
      double sum = 0;
      for (int64_t k = 0; k < a.dims[3]; ++k) {
        int64_t ia[4] = {i[0], i[1], i[2], k}, ib[4] = {i[0], i[1], k, i[3]};
        sum += at(op.in0, ia) * at(op.in1, ib);
      }
      at(op.out, i) = sum;
    });
  }

  void pointwise(const GraphOp& op) {
    const GraphTensor& out = g_.tensor(op.out);
    each(out.dims, [&](const int64_t* i) {
      double x = at(op.in0, i);
      double y = op.in1 ? at(op.in1, i) : 0;
      double r = 0;
      switch (op.pointwise) {
        case Pointwise::mul: r = x * y; break;
        case Pointwise::sub: r = x - y; break;
        case Pointwise::add: r = x + y; break;
        case Pointwise::div: r = x / y; break;
        case Pointwise::exp: r = std::exp(x); break;
        case Pointwise::log: r = std::log(x); break;
        case Pointwise::gen_index: r = static_cast<double>(i[op.axis]); break;
        case Pointwise::cmp_ge: r = x >= y ? 1 : 0; break;
        case Pointwise::binary_select: r = at(op.in2, i) != 0 ? x : y; break;
        case Pointwise::identity: r = x; break;
      }
      at(op.out, i) = r;
    });
  }

  void reduction(const GraphOp& op) {
    const GraphTensor &in = g_.tensor(op.in0), &out = g_.tensor(op.out);
    double init = op.reduce == Reduce::max ? -INFINITY : 0.0;
    each(out.dims, [&](const int64_t* i) { at(op.out, i) = init; });
    each(in.dims, [&](const int64_t* i) {
      double& acc = at(op.out, i);
      double x = at(op.in0, i);
      acc = op.reduce == Reduce::max ? std::max(acc, x) : acc + x;
    });
  }

  const Graph& g_;
  std::map<int64_t, View> views_;
};

std::shared_ptr<std::vector<double>> buffer_of(const Tensor& t) {
  const double* p = t.data<double>();
  return std::make_shared<std::vector<double>>(p, p + t.numel());
}

std::shared_ptr<std::vector<double>> buffer(int64_t n) { return std::make_shared<std::vector<double>>(n, NAN); }

// Every operation reads only tensors bound by the caller or written earlier; each tensor is
// written once; ids are unique.
void check_well_formed(const Graph& g) {
  std::set<int64_t> ids, written;
  for (const GraphTensor& t : g.tensors) CHECK(ids.insert(t.uid).second);
  for (const GraphOp& op : g.ops) {
    for (int64_t in : {op.in0, op.in1, op.in2}) {
      if (in == 0) continue;
      INFO("input ", in);
      const GraphTensor& t = g.tensor(in);
      CHECK((!t.is_virtual || written.count(in)));
    }
    INFO("output ", op.out);
    CHECK(!g.tensor(op.out).by_value);
    CHECK(written.insert(op.out).second);
  }
  for (const GraphTensor& t : g.tensors)
    if (t.is_virtual) CHECK(written.count(t.uid));
}

}  // namespace

TEST_CASE("cuDNN's attention graph, run by its definition on the CPU, equals the CPU attention") {
  for (int64_t heads : {1, 3}) {
    INFO(heads, " heads");
    int64_t d = 4;
    test::AttentionReference ref(2, 5, heads, d, 7);
    const Tensor &qkv = ref.qkv, &dout = ref.dout, &out = ref.out, &lse = ref.lse, &dqkv = ref.dqkv;
    cuda::AttentionLayout L = ref.layout();

    Graph fwd = forward_graph(L);
    check_well_formed(fwd);
    auto qkv_mem = buffer_of(qkv), o = buffer(out.numel()), stats = buffer(lse.numel());
    Interpreter f(fwd);
    f.bind_heads({kQ, kK, kV}, qkv_mem, d);
    f.bind(kO, o);
    f.bind(kStats, stats);
    f.run();
    test::check_values(out, *o, 1e-12);
    test::check_values(lse, *stats, 1e-12);

    Graph bwd = backward_graph(L);
    check_well_formed(bwd);
    auto d_o = buffer_of(dout), dq = buffer(dqkv.numel()), work = buffer(bwd.workspace_bytes() / 4);
    Interpreter r(bwd);
    r.bind_heads({kQ, kK, kV}, qkv_mem, d);
    r.bind(kO, o);
    r.bind(kDO, d_o);
    r.bind(kStats, stats);
    r.bind_heads({kDQ, kDK, kDV}, dq, d);
    r.bind(kSoftmaxSum, work, bwd.workspace_offset(kSoftmaxSum) / 4);
    r.bind(kDQAccum, work, bwd.workspace_offset(kDQAccum) / 4);
    r.run();
    test::check_values(dqkv, *dq, 1e-10);
  }
}

TEST_CASE("the attention graph's workspace holds its f32 tensors apart, aligned") {
  cuda::AttentionLayout L(2, 12, 3, 3 * 3 * 8);
  Graph bwd = backward_graph(L);
  int64_t sum = bwd.workspace_offset(kSoftmaxSum), acc = bwd.workspace_offset(kDQAccum);
  CHECK(sum % 256 == 0);
  CHECK(acc % 256 == 0);
  CHECK(acc >= sum + 2 * 3 * 12 * 4);
  CHECK(bwd.workspace_bytes() >= acc + 2 * 3 * 12 * 8 * 4);
  CHECK(forward_graph(L).workspace_bytes() == 0);
  CHECK_THROWS_WITH_AS(forward_graph(L).workspace_offset(kDQAccum), doctest::Contains("not in the workspace"),
                       Error);
}

TEST_CASE("cuDNN takes the attention only where its engines have a case for it") {
  std::string why;
  CHECK(supported(cuda::AttentionLayout(16, 1024, 12, 3 * 12 * 64), 91900, &why));
  CHECK(supported(cuda::AttentionLayout(2, 100, 4, 3 * 4 * 64), 91900, &why));
  CHECK_FALSE(supported(cuda::AttentionLayout(2, 100, 4, 3 * 4 * 64), 91500, &why));
  CHECK(why.find("multiple of 128") != std::string::npos);
  CHECK(supported(cuda::AttentionLayout(2, 256, 4, 3 * 4 * 64), 91500, &why));
  CHECK_FALSE(supported(cuda::AttentionLayout(2, 128, 4, 3 * 4 * 4), 91900, &why));
  CHECK(why.find("head size 4") != std::string::npos);
  CHECK_FALSE(supported(cuda::AttentionLayout(2, 128, 1, 3 * 256), 91900, &why));
  CHECK_FALSE(supported(cuda::AttentionLayout(2, 128, 4, 3 * 4 * 64), 8907, &why));
  CHECK(why.find("cuDNN 9") != std::string::npos);
  CHECK_FALSE(supported(cuda::AttentionLayout(2, 128, 4, 3 * 4 * 64), 91001, &why));
  CHECK(why.find("9.10.2") != std::string::npos);
  CHECK(supported(cuda::AttentionLayout(2, 128, 4, 3 * 4 * 64), 91002, &why));
}

TEST_CASE("cuDNN accepts every tensor and operation of the attention graphs (where libcudnn loads)") {
  for (bool forward : {true, false}) {
    for (int64_t heads : {1, 12}) {
      INFO(std::string(forward ? "forward" : "backward"), ", ", heads, " heads");
      std::string result = cuda::cudnn_attention_describe(forward, cuda::AttentionLayout(2, 128, heads, heads * 3 * 64));
      if (result.rfind("unavailable", 0) == 0) {
        MESSAGE("cuDNN descriptors not checked: " << result);
        return;
      }
      CHECK_MESSAGE(result.empty(), result);
    }
  }
}
