// cuDNN's fused flash attention through its backend graph API: the graphs of core/cuda/sdpa_graph.h
// become backend descriptors, cuDNN's heuristics pick an engine, and the finalized plan is cached
// per layout. libcudnn.so.9 is opened at the first call rather than linked, so that a CUDA build
// still runs (on its own kernels) where cuDNN is not installed.
#include "core/cuda/cudnn_attention.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/cuda/bf16.h"
#include "core/cuda/cuda_runtime_api.h"
#include "core/cuda/launch.h"
#include "core/cuda/sdpa_graph.h"

#ifdef FLEXTP_WITH_CUDNN
#include <cudnn_graph.h>
#endif

namespace flextp::cuda {
namespace {

std::mutex g_path_mu;
std::string g_path = "own kernels (no attention call yet)";

void set_path(const std::string& path) {
  std::lock_guard<std::mutex> lock(g_path_mu);
  g_path = path;
}

// Says once per distinct reason why attention is not on cuDNN, so a run is not silently slower.
void fall_back(const std::string& why) {
  static std::mutex mu;
  static std::set<std::string> said;
  set_path("own kernels: " + why);
  std::lock_guard<std::mutex> lock(mu);
  if (said.insert(why).second)
    std::fprintf(stderr, "flextp: attention on own kernels instead of cuDNN: %s\n", why.c_str());
}

}  // namespace

std::string attention_path() {
  std::lock_guard<std::mutex> lock(g_path_mu);
  return g_path;
}

#ifndef FLEXTP_WITH_CUDNN

namespace {
bool without_cudnn(bool wanted) {
  if (wanted) fall_back("this build found no cuDNN headers (cudnn_graph.h)");
  else set_path("own kernels");
  return false;
}
}  // namespace

std::string cudnn_attention_describe(bool, const AttentionLayout&) {
  return "unavailable: this build found no cuDNN headers (cudnn_graph.h)";
}
bool cudnn_attention_forward(const Tensor&, int64_t, Tensor&, Tensor&, bool wanted) { return without_cudnn(wanted); }
bool cudnn_attention_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, int64_t, Tensor&,
                              bool wanted) {
  return without_cudnn(wanted);
}

#else

namespace {

Tensor to_bf16(const Tensor& t) { return bf16_copy(t.data<float>(), t.numel(), t.device()); }

void from_bf16(const Tensor& b, Tensor& t) { bf16_to_f32(b.raw(), t.data<float>(), t.numel()); }

void* offset_bf16(const Tensor& b, int64_t elements) {
  return static_cast<char*>(b.raw()) + elements * dtype_size(DType::BF16);
}

// The cuDNN entry points, from libcudnn.so.9 opened at run time.
struct Api {
  decltype(&cudnnGetVersion) get_version = nullptr;
  decltype(&cudnnGetErrorString) error_string = nullptr;
  decltype(&cudnnGetLastErrorString) last_error = nullptr;
  decltype(&cudnnCreate) create = nullptr;
  decltype(&cudnnSetStream) set_stream = nullptr;
  decltype(&cudnnBackendCreateDescriptor) create_descriptor = nullptr;
  decltype(&cudnnBackendDestroyDescriptor) destroy_descriptor = nullptr;
  decltype(&cudnnBackendSetAttribute) set_attribute = nullptr;
  decltype(&cudnnBackendGetAttribute) get_attribute = nullptr;
  decltype(&cudnnBackendFinalize) finalize = nullptr;
  decltype(&cudnnBackendExecute) execute = nullptr;
  int64_t version = 0;
  std::string error;  // why cuDNN cannot be used, if it cannot
};

Api load_api() {
  Api a;
  const char* env = std::getenv("FLEXTP_CUDNN_LIBRARY");
  std::vector<std::string> names;
  if (env && *env) names = {env};
  else names = {"libcudnn.so.9", "libcudnn.so"};
#ifdef FLEXTP_CUDNN_LIBRARY_DIR
  if (!env || !*env) names.push_back(FLEXTP_CUDNN_LIBRARY_DIR "/libcudnn.so.9");  // where the build found it
#endif
  void* lib = nullptr;
  std::string tried;
  for (const std::string& name : names) {
    lib = dlopen(name.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (lib) break;
    const char* e = dlerror();
    tried += (tried.empty() ? "" : "; ") + std::string(e ? e : name);
  }
  if (!lib) {
    a.error = "cannot load cuDNN (" + tried +
              "); put cuDNN 9's lib folder on LD_LIBRARY_PATH or name the library in FLEXTP_CUDNN_LIBRARY";
    return a;
  }
  auto sym = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
    if (!fn && a.error.empty()) a.error = std::string("the loaded cuDNN lacks ") + name;
  };
  sym(a.get_version, "cudnnGetVersion");
  sym(a.error_string, "cudnnGetErrorString");
  sym(a.last_error, "cudnnGetLastErrorString");
  sym(a.create, "cudnnCreate");
  sym(a.set_stream, "cudnnSetStream");
  sym(a.create_descriptor, "cudnnBackendCreateDescriptor");
  sym(a.destroy_descriptor, "cudnnBackendDestroyDescriptor");
  sym(a.set_attribute, "cudnnBackendSetAttribute");
  sym(a.get_attribute, "cudnnBackendGetAttribute");
  sym(a.finalize, "cudnnBackendFinalize");
  sym(a.execute, "cudnnBackendExecute");
  if (a.error.empty()) a.version = static_cast<int64_t>(a.get_version());
  return a;
}

const Api& api() {
  static const Api a = load_api();
  return a;
}

// What failed, cuDNN's status and cuDNN's own last message (which says why: a status such as
// NOT_SUPPORTED alone does not).
std::string failure(cudnnStatus_t status, const std::string& what) {
  char message[1024] = "";
  api().last_error(message, sizeof message);
  return what + " failed: " + api().error_string(status) + (message[0] ? std::string(" (") + message + ")" : std::string());
}

// A cuDNN status as an error naming the call, the status and cuDNN's own last message.
void check(cudnnStatus_t status, const std::string& what) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  throw Error("cuDNN: " + failure(status, what));
}

class Desc {
 public:
  Desc(cudnnBackendDescriptorType_t type, std::string what) : what_(std::move(what)) {
    check(api().create_descriptor(type, &d_), "creating the descriptor of " + what_);
  }
  ~Desc() {
    if (d_) api().destroy_descriptor(d_);
  }
  Desc(const Desc&) = delete;
  Desc& operator=(const Desc&) = delete;

  Desc& set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count, const void* values) {
    check(api().set_attribute(d_, name, type, count, values),
          "setting attribute " + std::to_string(static_cast<int>(name)) + " of " + what_);
    return *this;
  }
  template <typename T>
  Desc& set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, T value) {
    return set(name, type, 1, &value);
  }
  Desc& link(cudnnBackendAttributeName_t name, const Desc& other) {
    cudnnBackendDescriptor_t o = other.d_;
    return set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &o);
  }
  void finalize() { check(api().finalize(d_), "finalizing " + what_); }
  cudnnStatus_t try_finalize() { return api().finalize(d_); }
  cudnnBackendDescriptor_t get() const { return d_; }

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
  std::string what_;
};
using DescPtr = std::unique_ptr<Desc>;

cudnnDataType_t data_type(sdpa::Type t) {
  switch (t) {
    case sdpa::Type::io: return CUDNN_DATA_BFLOAT16;
    case sdpa::Type::f32: return CUDNN_DATA_FLOAT;
    case sdpa::Type::i32: return CUDNN_DATA_INT32;
    case sdpa::Type::boolean: return CUDNN_DATA_BOOLEAN;
  }
  return CUDNN_DATA_FLOAT;
}

cudnnPointwiseMode_t pointwise_mode(sdpa::Pointwise p) {
  switch (p) {
    case sdpa::Pointwise::mul: return CUDNN_POINTWISE_MUL;
    case sdpa::Pointwise::sub: return CUDNN_POINTWISE_SUB;
    case sdpa::Pointwise::add: return CUDNN_POINTWISE_ADD;
    case sdpa::Pointwise::div: return CUDNN_POINTWISE_DIV;
    case sdpa::Pointwise::exp: return CUDNN_POINTWISE_EXP;
    case sdpa::Pointwise::log: return CUDNN_POINTWISE_LOG;
    case sdpa::Pointwise::gen_index: return CUDNN_POINTWISE_GEN_INDEX;
    case sdpa::Pointwise::cmp_ge: return CUDNN_POINTWISE_CMP_GE;
    case sdpa::Pointwise::binary_select: return CUDNN_POINTWISE_BINARY_SELECT;
    case sdpa::Pointwise::identity: return CUDNN_POINTWISE_IDENTITY;
  }
  return CUDNN_POINTWISE_IDENTITY;
}

cudnnHandle_t handle() {
  static std::mutex mu;
  static std::map<int, cudnnHandle_t> handles;  // one per device, kept for the process
  int device = 0;
  FLEXTP_CUDA_CHECK(cudaGetDevice(&device));
  std::lock_guard<std::mutex> lock(mu);
  cudnnHandle_t& h = handles[device];
  if (!h) check(api().create(&h), "cudnnCreate");
  check(api().set_stream(h, stream()), "cudnnSetStream");
  return h;
}

// A finalized execution plan for one graph, with every descriptor it was built from.
struct Plan {
  sdpa::Graph graph;
  std::map<int64_t, DescPtr> tensors;
  std::vector<DescPtr> keep;
  std::vector<cudnnBackendDescriptor_t> ops;
  DescPtr plan;
  int64_t cudnn_workspace = 0;
};

std::string op_name(const sdpa::GraphOp& op, size_t i) {
  const char* kind = op.kind == sdpa::OpKind::matmul      ? "matmul"
                     : op.kind == sdpa::OpKind::pointwise ? "pointwise"
                     : op.kind == sdpa::OpKind::reduction ? "reduction"
                                                          : "reshape";
  return std::string(kind) + " operation #" + std::to_string(i) + " of the attention graph";
}

// A tensor's descriptor.
DescPtr describe_tensor(const sdpa::GraphTensor& t) {
  auto d = std::make_unique<Desc>(CUDNN_BACKEND_TENSOR_DESCRIPTOR, "tensor " + std::to_string(t.uid));
  d->set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, data_type(t.type));
  d->set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, t.dims);
  d->set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, t.strides);
  d->set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, t.uid);
  d->set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, int64_t{16});
  d->set(CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, t.is_virtual);
  if (t.by_value) d->set(CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, true);
  d->finalize();
  return d;
}

// Operation i's descriptor (unfinalized), linked to the plan's tensors; the descriptors it links
// to go into p.keep.
DescPtr describe_op(const sdpa::GraphOp& op, size_t i, Plan& plan) {
  Plan* p = &plan;
  auto tensor = [&](int64_t uid) -> const Desc& { return *p->tensors.at(uid); };
  std::string name = op_name(op, i);
  DescPtr o;
  switch (op.kind) {
    case sdpa::OpKind::matmul: {
      auto mm = std::make_unique<Desc>(CUDNN_BACKEND_MATMUL_DESCRIPTOR, "the matmul of " + name);
      mm->set(CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, CUDNN_DATA_FLOAT);
      mm->finalize();
      o = std::make_unique<Desc>(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, name);
      o->link(CUDNN_ATTR_OPERATION_MATMUL_ADESC, tensor(op.in0));
      o->link(CUDNN_ATTR_OPERATION_MATMUL_BDESC, tensor(op.in1));
      o->link(CUDNN_ATTR_OPERATION_MATMUL_CDESC, tensor(op.out));
      o->link(CUDNN_ATTR_OPERATION_MATMUL_DESC, *mm);
      p->keep.push_back(std::move(mm));
      break;
    }
    case sdpa::OpKind::pointwise: {
      auto pw = std::make_unique<Desc>(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, "the mode of " + name);
      pw->set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, pointwise_mode(op.pointwise));
      pw->set(CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, data_type(op.compute));
      if (op.pointwise == sdpa::Pointwise::gen_index) pw->set(CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, op.axis);
      pw->finalize();
      o = std::make_unique<Desc>(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, name);
      o->link(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, *pw);
      o->link(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, tensor(op.in0));
      if (op.in1) o->link(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, tensor(op.in1));
      if (op.in2) o->link(CUDNN_ATTR_OPERATION_POINTWISE_TDESC, tensor(op.in2));
      o->link(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, tensor(op.out));
      p->keep.push_back(std::move(pw));
      break;
    }
    case sdpa::OpKind::reduction: {
      auto red = std::make_unique<Desc>(CUDNN_BACKEND_REDUCTION_DESCRIPTOR, "the mode of " + name);
      red->set(CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE,
               op.reduce == sdpa::Reduce::max ? CUDNN_REDUCE_TENSOR_MAX : CUDNN_REDUCE_TENSOR_ADD);
      red->set(CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, CUDNN_DATA_FLOAT);
      red->finalize();
      o = std::make_unique<Desc>(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, name);
      o->link(CUDNN_ATTR_OPERATION_REDUCTION_XDESC, tensor(op.in0));
      o->link(CUDNN_ATTR_OPERATION_REDUCTION_YDESC, tensor(op.out));
      o->link(CUDNN_ATTR_OPERATION_REDUCTION_DESC, *red);
      p->keep.push_back(std::move(red));
      break;
    }
    case sdpa::OpKind::reshape: {
      o = std::make_unique<Desc>(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR, name);
      o->link(CUDNN_ATTR_OPERATION_RESHAPE_XDESC, tensor(op.in0));
      o->link(CUDNN_ATTR_OPERATION_RESHAPE_YDESC, tensor(op.out));
      break;
    }
  }
  return o;
}

// The descriptors of every tensor and operation of the graph: no GPU is needed up to here.
std::unique_ptr<Plan> describe(sdpa::Graph graph) {
  auto p = std::make_unique<Plan>();
  p->graph = std::move(graph);
  for (const sdpa::GraphTensor& t : p->graph.tensors) p->tensors[t.uid] = describe_tensor(t);
  for (size_t i = 0; i < p->graph.ops.size(); ++i) {
    DescPtr o = describe_op(p->graph.ops[i], i, *p);
    o->finalize();
    p->ops.push_back(o->get());
    p->keep.push_back(std::move(o));
  }
  return p;
}

// The operation graph of the plan's operations, on handle h (which engines need); cuDNN checks
// here that the operations fit together, and that much works without a handle or a GPU.
DescPtr operation_graph(const Plan& p, cudnnHandle_t h) {
  auto graph = std::make_unique<Desc>(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "the attention graph");
  graph->set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, static_cast<int64_t>(p.ops.size()),
             p.ops.data());
  // The handle attribute is deprecated from 9.8 on in favour of device properties, which older
  // cuDNN 9 releases lack; it still works on all of them.
  if (h) graph->set(static_cast<cudnnBackendAttributeName_t>(800 /* OPERATIONGRAPH_HANDLE */), CUDNN_TYPE_HANDLE, h);
  graph->finalize();
  return graph;
}

// The first engine of cuDNN's ranking for the graph that takes it.
void choose_engine(Plan* p, cudnnHandle_t h) {
  DescPtr graph_desc = operation_graph(*p, h);

  // The engines cuDNN's heuristics rank for the graph, best first; the first that finalizes wins.
  // Every refusal, with cuDNN's reason: the error must say why no engine took the graph.
  std::vector<std::string> rejected;
  for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    const std::string heur_name = mode == CUDNN_HEUR_MODE_A ? "heuristics mode A" : "heuristics mode FALLBACK";
    Desc heur(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, "the engine heuristics");
    heur.link(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, *graph_desc);
    heur.set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, mode);
    if (cudnnStatus_t st = heur.try_finalize(); st != CUDNN_STATUS_SUCCESS) {
      rejected.push_back(failure(st, "finalizing " + heur_name));
      continue;
    }
    int64_t count = 0;
    check(api().get_attribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count,
                              nullptr),
          "counting the engine configurations");
    std::vector<DescPtr> configs;
    std::vector<cudnnBackendDescriptor_t> raw;
    for (int64_t i = 0; i < count; ++i) {
      configs.push_back(std::make_unique<Desc>(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, "an engine configuration"));
      raw.push_back(configs.back()->get());
    }
    int64_t got = 0;
    if (count)
      check(api().get_attribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count,
                                &got, raw.data()),
            "reading the engine configurations");
    for (int64_t i = 0; i < got; ++i) {
      auto plan = std::make_unique<Desc>(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, "the execution plan");
      plan->set(static_cast<cudnnBackendAttributeName_t>(400 /* EXECUTION_PLAN_HANDLE */), CUDNN_TYPE_HANDLE, h);
      plan->link(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, *configs[i]);
      cudnnStatus_t st = plan->try_finalize();
      if (st != CUDNN_STATUS_SUCCESS) {
        rejected.push_back(failure(st, "the plan of engine configuration " + std::to_string(i) + " of " + heur_name));
        continue;
      }
      int64_t n = 0;
      check(api().get_attribute(plan->get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n,
                                &p->cudnn_workspace),
            "reading the plan's workspace size");
      p->plan = std::move(plan);
      p->keep.push_back(std::move(graph_desc));
      for (DescPtr& c : configs) p->keep.push_back(std::move(c));
      return;
    }
  }
  std::string why;
  const size_t shown = 4;  // cuDNN may rank dozens of configurations; their reasons repeat
  for (size_t i = 0; i < rejected.size() && i < shown; ++i) why += "; " + rejected[i];
  if (rejected.size() > shown) why += "; and " + std::to_string(rejected.size() - shown) + " more refusals";
  throw Error("cuDNN " + std::to_string(api().version) + " has no engine for the attention graph" +
              (why.empty() ? std::string(": the heuristics offered none") : why));
}

// Plans by (direction, layout, device); a layout that failed keeps its reason and is not retried.
struct Cached {
  std::unique_ptr<Plan> plan;
  std::string why;
};

const Plan* plan_for(bool forward, const AttentionLayout& L, std::string* why) {
  static std::mutex mu;
  static std::map<std::tuple<bool, int64_t, int64_t, int64_t, int64_t, int64_t, int>, Cached> cache;
  int device = 0;
  FLEXTP_CUDA_CHECK(cudaGetDevice(&device));
  std::lock_guard<std::mutex> lock(mu);
  Cached& c = cache[{forward, L.b, L.t, L.h, L.d, L.qkv_stride, device}];
  if (!c.plan && c.why.empty()) {
    try {
      std::unique_ptr<Plan> p = describe(forward ? sdpa::forward_graph(L) : sdpa::backward_graph(L));
      choose_engine(p.get(), handle());
      c.plan = std::move(p);
    } catch (const Error& e) {
      c.why = e.what();
    }
  }
  if (!c.plan) *why = c.why;
  return c.plan.get();
}

// Whether this call can go to cuDNN at all, before any plan is built.
bool usable(const Tensor& qkv, int64_t n_head, bool wanted, std::string* why) {
  if (!wanted) {
    set_path("own kernels");
    return false;
  }
  if (qkv.dtype() != DType::F32) {
    *why = std::string("cuDNN's attention takes f32 models, not ") + dtype_name(qkv.dtype());
    return false;
  }
  if (!api().error.empty()) {
    *why = api().error;
    return false;
  }
  if (n_head == 0 || qkv.numel() == 0) {
    *why = "empty attention";
    return false;
  }
  return sdpa::supported(AttentionLayout(qkv.size(0), qkv.size(1), n_head, qkv.size(2)), api().version, why);
}

void execute(const Plan& p, const std::map<int64_t, void*>& bound, const Tensor& workspace) {
  std::vector<int64_t> uids;
  std::vector<void*> pointers;
  for (const sdpa::GraphTensor& t : p.graph.tensors) {
    if (t.is_virtual) continue;
    uids.push_back(t.uid);
    pointers.push_back(t.by_value ? const_cast<float*>(&t.value) : bound.at(t.uid));
  }
  char* ws = static_cast<char*>(workspace.raw());
  void* cudnn_ws = ws + p.graph.workspace_bytes();
  Desc pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, "the attention's variant pack");
  pack.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, static_cast<int64_t>(uids.size()), uids.data());
  pack.set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, static_cast<int64_t>(pointers.size()),
           pointers.data());
  pack.set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, cudnn_ws);
  pack.finalize();
  check(api().execute(handle(), p.plan->get(), pack.get()), "cudnnBackendExecute (attention)");
}

Tensor workspace_for(const Plan& p, Device device) {
  int64_t bytes = p.graph.workspace_bytes() + p.cudnn_workspace;
  Tensor ws = Tensor::empty({std::max<int64_t>(1, (bytes + 3) / 4)}, DType::F32, device);
  if (p.graph.workspace_bytes())  // cuDNN accumulates dQ into its workspace
    FLEXTP_CUDA_CHECK(cudaMemsetAsync(ws.raw(), 0, p.graph.workspace_bytes(), stream()));
  return ws;
}

// The plan for this call, or null (with the reason said) when the own kernels must take it.
const Plan* plan_or_fall_back(bool forward, const Tensor& qkv, int64_t n_head, const AttentionLayout& L,
                              bool wanted) {
  std::string why;
  const Plan* p = usable(qkv, n_head, wanted, &why) ? plan_for(forward, L, &why) : nullptr;
  if (!p && !why.empty()) fall_back(why);
  return p;
}

// What attention_path() says after a call cuDNN took (worded once: every layer's call sets it).
const std::string& in_use() {
  static const std::string path = [] {
    int64_t v = api().version;
    return "cuDNN " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
           std::to_string(v % 100) + " fused flash attention (bf16)";
  }();
  return path;
}

}  // namespace

std::string cudnn_attention_describe(bool forward, const AttentionLayout& L) {
  if (!api().error.empty()) return "unavailable: " + api().error;
  try {
    operation_graph(*describe(forward ? sdpa::forward_graph(L) : sdpa::backward_graph(L)), nullptr);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

bool cudnn_attention_forward(const Tensor& qkv, int64_t n_head, Tensor& out, Tensor& lse, bool wanted) {
  AttentionLayout L(qkv.size(0), qkv.size(1), n_head, qkv.size(2));
  const Plan* p = plan_or_fall_back(true, qkv, n_head, L, wanted);
  if (!p) return false;
  Tensor q16 = to_bf16(qkv);
  Tensor o16 = Tensor::empty(out.shape(), DType::BF16, out.device());
  std::map<int64_t, void*> bound{{sdpa::kQ, q16.raw()},
                                 {sdpa::kK, offset_bf16(q16, L.d)},
                                 {sdpa::kV, offset_bf16(q16, 2 * L.d)},
                                 {sdpa::kO, o16.raw()},
                                 {sdpa::kStats, lse.raw()}};
  execute(*p, bound, workspace_for(*p, qkv.device()));
  from_bf16(o16, out);
  set_path(in_use());
  return true;
}

bool cudnn_attention_backward(const Tensor& qkv, const Tensor& out, const Tensor& lse, const Tensor& dout,
                              int64_t n_head, Tensor& dqkv, bool wanted) {
  AttentionLayout L(qkv.size(0), qkv.size(1), n_head, qkv.size(2));
  const Plan* p = plan_or_fall_back(false, qkv, n_head, L, wanted);
  if (!p) return false;
  Tensor q16 = to_bf16(qkv), o16 = to_bf16(out), do16 = to_bf16(dout);
  Tensor dq16 = Tensor::empty(dqkv.shape(), DType::BF16, dqkv.device());
  Tensor ws = workspace_for(*p, qkv.device());
  char* w = static_cast<char*>(ws.raw());
  std::map<int64_t, void*> bound{{sdpa::kQ, q16.raw()},
                                 {sdpa::kK, offset_bf16(q16, L.d)},
                                 {sdpa::kV, offset_bf16(q16, 2 * L.d)},
                                 {sdpa::kO, o16.raw()},
                                 {sdpa::kDO, do16.raw()},
                                 {sdpa::kStats, lse.raw()},
                                 {sdpa::kDQ, dq16.raw()},
                                 {sdpa::kDK, offset_bf16(dq16, L.d)},
                                 {sdpa::kDV, offset_bf16(dq16, 2 * L.d)},
                                 {sdpa::kSoftmaxSum, w + p->graph.workspace_offset(sdpa::kSoftmaxSum)},
                                 {sdpa::kDQAccum, w + p->graph.workspace_offset(sdpa::kDQAccum)}};
  execute(*p, bound, ws);
  from_bf16(dq16, dqkv);
  set_path(in_use());
  return true;
}

#endif  // FLEXTP_WITH_CUDNN

}  // namespace flextp::cuda
