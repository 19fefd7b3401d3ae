#include "core/autograd.h"

#include <atomic>
#include <unordered_map>

#include "core/ops/elementwise.h"

namespace flextp {
namespace {
thread_local bool g_grad_enabled = true;
std::atomic<uint64_t> g_sequence{0};

bool needs_grad(const Tensor& t) { return t.defined() && (t.requires_grad() || t.grad_fn()); }

// Whether `g` (held by `holders` handles) is the only way to its memory, all of it: then the
// engine may keep it, or sum into it, instead of copying it. A gradient some node still reads (an
// op's backward that passes its incoming gradient through, a view of a bigger one) is shared.
// Keeping a product instead of copying it spares a read and a write of every parameter's gradient
// per step (GPT-2 small: 124 M parameters, ~1 GB of memory traffic).
bool sole_owner(const Tensor& g, long holders) {
  const TensorImpl& i = g.impl();
  return g.impl_ptr().use_count() == holders && i.storage.use_count() == 1 && i.offset == 0 &&
         i.storage->bytes == g.nbytes() && !i.grad && !i.grad_fn;
}

// Adds g into a slot: the first contribution is kept as is (no copy), later ones are summed into
// the slot's own tensor when no one else can see it, else into a fresh tensor, since the first may
// share memory with a tensor some other node still reads (the same sums either way).
void accumulate(Tensor& slot, const Tensor& g) {
  if (!slot.defined()) {
    slot = g;
    return;
  }
  if (!sole_owner(slot, 1)) slot = slot.clone();
  add_inplace(slot, g);
}

// A leaf's gradient accumulates (+=) over backward passes; the first contribution becomes the
// gradient when `g` is its only handle (the engine's: `holders` of them), else it is copied, since
// g may share memory with a tensor the graph still reads.
void add_to_leaf_grad(Tensor leaf, const Tensor& g, long holders) {
  Tensor slot = leaf.grad();
  if (slot.defined())
    add_inplace(slot, g);
  else if (sole_owner(g, holders) && !g.requires_grad())
    leaf.impl().grad = g.impl_ptr();
  else
    leaf.impl().grad = g.clone().impl_ptr();
}

void check_grad(const Node& node, size_t input, const Tensor& g, const Shape& want, DType dtype) {
  FLEXTP_CHECK(g.shape() == want && g.dtype() == dtype, "backward of ", node.name,
               " returned a gradient ", g.str(), " for input ", input, " of shape ",
               shape_str(want));
}

}  // namespace

Node::~Node() {
  std::vector<std::shared_ptr<Node>> stack;
  for (Edge& e : edges)
    if (e.node) stack.push_back(std::move(e.node));
  while (!stack.empty()) {
    std::shared_ptr<Node> n = std::move(stack.back());
    stack.pop_back();
    if (n.use_count() == 1)  // we hold the last reference: take its inputs before it dies
      for (Edge& e : n->edges)
        if (e.node) stack.push_back(std::move(e.node));
  }
}

bool grad_enabled() { return g_grad_enabled; }
NoGradGuard::NoGradGuard() : prev_(g_grad_enabled) { g_grad_enabled = false; }
NoGradGuard::~NoGradGuard() { g_grad_enabled = prev_; }

void record(const char* name, Tensor& out, const std::vector<Tensor>& inputs, BackwardFn fn) {
  if (!g_grad_enabled) return;
  bool any = false;
  for (const Tensor& t : inputs) any = any || needs_grad(t);
  if (!any) return;
  auto node = std::make_shared<Node>();
  node->name = name;
  node->edges.resize(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    if (!needs_grad(t)) continue;
    if (t.grad_fn())
      node->edges[i].node = t.grad_fn();
    else
      node->edges[i].leaf = t.impl_ptr();
  }
  node->out_shape = out.shape();
  node->out_dtype = out.dtype();
  node->backward = std::move(fn);
  node->sequence = g_sequence++;
  out.impl().grad_fn = node;
  out.impl().requires_grad = true;
}

namespace {

// The gradient backward() starts from: the given one, or 1 for a scalar.
Tensor root_gradient(const Tensor& root, const Tensor& grad_root) {
  FLEXTP_CHECK(needs_grad(root), "backward() on a tensor that does not require grad (", root.str(),
               "): no input of the computation had requires_grad set");
  Tensor g0 = grad_root;
  if (!g0.defined()) {
    FLEXTP_CHECK(root.numel() == 1, "backward() on a non-scalar tensor ", root.str(),
                 " needs an explicit gradient of the same shape");
    g0 = Tensor::ones(root.shape(), root.dtype(), root.device());
  }
  FLEXTP_CHECK(g0.shape() == root.shape() && g0.dtype() == root.dtype(), "backward(): gradient ",
               g0.str(), " does not match tensor ", root.str());
  return g0;
}

// Runs `node`'s backward on its gradient `g` and hands each input its gradient: a node's to
// `pending`, a leaf's to its .grad.
void run_node(Node& node, const Tensor& g, std::unordered_map<Node*, Tensor>& pending) {
  std::vector<bool> needs(node.edges.size());
  for (size_t i = 0; i < needs.size(); ++i) needs[i] = node.edges[i].needed();
  std::vector<Tensor> grads = node.backward(g, needs);
  FLEXTP_CHECK(grads.size() == node.edges.size(), "backward of ", node.name, " returned ",
               grads.size(), " gradients for ", node.edges.size(), " inputs");
  for (size_t i = 0; i < grads.size(); ++i) {
    Edge& e = node.edges[i];
    if (!e.needed() || !grads[i].defined()) continue;
    if (e.node) {
      check_grad(node, i, grads[i], e.node->out_shape, e.node->out_dtype);
      accumulate(pending[e.node.get()], grads[i]);
    } else {
      check_grad(node, i, grads[i], e.leaf->shape, e.leaf->dtype);
      // Held by `grads` alone when the closure kept no handle of its own: it may be kept.
      add_to_leaf_grad(Tensor(e.leaf), grads[i], 1);
    }
  }
}

}  // namespace

void run_backward(const Tensor& root, const Tensor& grad_root) {
  Tensor g0 = root_gradient(root, grad_root);
  if (!root.grad_fn()) {  // a leaf: its gradient is the given one (the caller's: always copied)
    add_to_leaf_grad(root, g0, 0);
    return;
  }

  // The nodes reachable from the root (iteratively) and how many edges of them lead to each node
  // (a node runs when all its consumers ran).
  std::unordered_map<Node*, size_t> consumers;
  std::vector<std::shared_ptr<Node>> reached{root.grad_fn()};  // keeps every node alive to the end
  for (size_t i = 0; i < reached.size(); ++i)
    for (const Edge& e : reached[i]->edges)
      if (e.node && consumers[e.node.get()]++ == 0) reached.push_back(e.node);

  NoGradGuard no_grad;  // backward closures compute with ops but record nothing
  std::unordered_map<Node*, Tensor> pending;
  pending[root.grad_fn().get()] = g0;
  std::vector<Node*> ready{root.grad_fn().get()};
  while (!ready.empty()) {
    size_t pick = 0;  // the latest created ready node
    for (size_t i = 1; i < ready.size(); ++i)
      if (ready[i]->sequence > ready[pick]->sequence) pick = i;
    Node* node = ready[pick];
    ready.erase(ready.begin() + static_cast<std::ptrdiff_t>(pick));
    FLEXTP_CHECK(!node->released, "backward through a graph that was already freed (node ",
                 node->name, "): a graph supports one backward(); run the forward pass again");
    auto found = pending.find(node);
    const bool ran = found != pending.end();
    if (ran) {
      Tensor g = std::move(found->second);
      pending.erase(found);  // before the gradients below insert (a rehash would move it)
      run_node(*node, g, pending);
    }
    // Free what the node saved as soon as it has run (one that no gradient reached stays as it is).
    if (ran) node->backward = nullptr, node->released = true;
    for (Edge& e : node->edges) {
      if (e.node && --consumers[e.node.get()] == 0) ready.push_back(e.node.get());
      if (ran) e.node.reset(), e.leaf.reset();
    }
  }
}

}  // namespace flextp
