#pragma once
// A small tape-free autograd: every differentiable op records a Node holding edges to its inputs
// and a closure computing the inputs' gradients from the output's gradient. backward() finds the
// nodes iteratively (no recursion: deep graphs cannot overflow the stack), runs each once all its
// consumers ran, latest created first (the backward mirrors the forward), and frees each node as
// soon as it has run.
//
// Gradient convention: gradients of leaves (parameters) accumulate (+=) across backward calls
// until zero_grad(); gradients flowing between nodes are summed when a tensor is used twice.
#include <functional>
#include <memory>
#include <vector>

#include "core/tensor.h"

namespace flextp {

// grads[i] is the gradient for input i (undefined when needs[i] is false or it has none).
using BackwardFn =
    std::function<std::vector<Tensor>(const Tensor& grad_out, const std::vector<bool>& needs)>;

struct Edge {
  std::shared_ptr<Node> node;        // input produced by another op
  std::shared_ptr<TensorImpl> leaf;  // or a leaf that requires grad
  bool needed() const { return node || leaf; }
};

struct Node {
  const char* name = "";
  std::vector<Edge> edges;
  Shape out_shape;
  DType out_dtype = DType::F32;
  BackwardFn backward;
  bool released = false;  // true once backward ran: its saved tensors are gone
  uint64_t sequence = 0;  // creation order (record's counter): backward runs later nodes first
  Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  // Tears the chain of inputs down iteratively: dropping a deep graph must not recurse.
  ~Node();
};

// Whether ops record the graph (thread-local; on by default).
bool grad_enabled();

// Disables graph recording for its lifetime (evaluation, optimizer updates).
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool prev_;
};

// Attaches a node to `out` if grad mode is on and any input needs a gradient. The closure must
// capture only detached tensors (Tensor::detach) so that no reference cycle keeps graphs alive.
void record(const char* name, Tensor& out, const std::vector<Tensor>& inputs, BackwardFn fn);

void run_backward(const Tensor& root, const Tensor& grad);

}  // namespace flextp
