#include "core/autograd.h"

#include <unordered_map>

#include "core/ops/elementwise.h"

namespace flextp {
namespace {
thread_local bool g_grad_enabled = true;
thread_local LeafGradReady g_leaf_ready;

bool needs_grad(const Tensor& t) { return t.defined() && (t.requires_grad() || t.grad_fn()); }

// Adds g into a slot: the first contribution is kept as is (no copy), later ones are summed into a
// fresh tensor, since the first may share memory with a tensor some other node still reads.
void accumulate(Tensor& slot, const Tensor& g) {
  if (!slot.defined()) {
    slot = g;
    return;
  }
  Tensor sum = slot.clone();
  add_inplace(sum, g);
  slot = sum;
}

// A leaf's gradient accumulates (+=) over backward passes; the first contribution is copied, since
// g may share memory with a tensor the graph still reads.
void add_to_leaf_grad(Tensor leaf, const Tensor& g) {
  Tensor slot = leaf.grad();
  if (slot.defined())
    add_inplace(slot, g);
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
LeafGradHook::LeafGradHook(LeafGradReady ready) : prev_(std::move(g_leaf_ready)) { g_leaf_ready = std::move(ready); }
LeafGradHook::~LeafGradHook() { g_leaf_ready = std::move(prev_); }

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
  out.impl().grad_fn = node;
  out.impl().requires_grad = true;
}

void run_backward(const Tensor& root, const Tensor& grad_root) {
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

  if (!root.grad_fn()) {  // a leaf: its gradient is the given one
    add_to_leaf_grad(root, g0);
    if (g_leaf_ready) g_leaf_ready(&root.impl());
    return;
  }

  // Iterative post-order DFS; reversed, it is a topological order from the root.
  std::vector<Node*> order;
  std::unordered_map<Node*, bool> visited;
  std::vector<std::pair<Node*, size_t>> stack{{root.grad_fn().get(), 0}};
  visited[root.grad_fn().get()] = true;
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    if (next < node->edges.size()) {
      Node* child = node->edges[next++].node.get();
      if (child && !visited[child]) {
        visited[child] = true;
        stack.push_back({child, 0});
      }
    } else {
      order.push_back(node);
      stack.pop_back();
    }
  }

  // With a leaf hook: the leaves whose last consumer is each node of the walk (walk position).
  std::vector<std::vector<const TensorImpl*>> final_after;
  if (g_leaf_ready) {
    std::unordered_map<const TensorImpl*, size_t> last;
    for (size_t at = 0; at < order.size(); ++at)
      for (const Edge& e : order[order.size() - 1 - at]->edges)
        if (e.leaf) last[e.leaf.get()] = at;
    final_after.resize(order.size());
    for (const auto& [leaf, at] : last) final_after[at].push_back(leaf);
  }
  auto leaves_final = [&](size_t at) {
    if (!final_after.empty())
      for (const TensorImpl* leaf : final_after[at]) g_leaf_ready(leaf);
  };

  NoGradGuard no_grad;  // backward closures compute with ops but record nothing
  std::unordered_map<Node*, Tensor> pending;
  pending[root.grad_fn().get()] = g0;
  // Keeps every node alive until the walk ends, even after its consumers were released.
  std::vector<std::shared_ptr<Node>> keep;
  keep.reserve(order.size());
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node* node = *it;
    FLEXTP_CHECK(!node->released, "backward through a graph that was already freed (node ",
                 node->name, "): a graph supports one backward(); run the forward pass again");
    const size_t at = static_cast<size_t>(it - order.rbegin());
    auto found = pending.find(node);
    if (found == pending.end()) {  // no gradient reached it
      leaves_final(at);
      continue;
    }
    Tensor g = found->second;
    pending.erase(found);
    std::vector<bool> needs(node->edges.size());
    for (size_t i = 0; i < needs.size(); ++i) needs[i] = node->edges[i].needed();
    std::vector<Tensor> grads = node->backward(g, needs);
    FLEXTP_CHECK(grads.size() == node->edges.size(), "backward of ", node->name, " returned ",
                 grads.size(), " gradients for ", node->edges.size(), " inputs");
    for (size_t i = 0; i < grads.size(); ++i) {
      Edge& e = node->edges[i];
      if (!e.needed() || !grads[i].defined()) continue;
      if (e.node) {
        check_grad(*node, i, grads[i], e.node->out_shape, e.node->out_dtype);
        accumulate(pending[e.node.get()], grads[i]);
      } else {
        check_grad(*node, i, grads[i], e.leaf->shape, e.leaf->dtype);
        add_to_leaf_grad(Tensor(e.leaf), grads[i]);
      }
    }
    // Free what the node saved as soon as it has run.
    node->backward = nullptr;
    node->released = true;
    for (Edge& e : node->edges) {
      if (e.node) keep.push_back(std::move(e.node));
      e.leaf.reset();
    }
    leaves_final(at);
  }
}

}  // namespace flextp
