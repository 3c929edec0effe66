#pragma once
// Reverse-mode autograd: a dynamic tape of Nodes, as in PyTorch. Each differentiable op
// makes one Node holding what backward needs (SavedTensors with their version at save
// time) and edges to the nodes of its inputs.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "memlens/tensor/tensor.hpp"

namespace memlens {

// Gradient recording is on by default and per thread; NoGradGuard turns it off in a scope.
struct GradMode {
  static bool is_enabled();
  static void set_enabled(bool on);
};

// Grad mode set for a scope, restored after (PyTorch's AutoGradMode); NoGradGuard turns
// it off, checkpointing turns it on for its recomputation inside backward.
class AutoGradMode {
 public:
  explicit AutoGradMode(bool on) : prev_(GradMode::is_enabled()) { GradMode::set_enabled(on); }
  ~AutoGradMode() { GradMode::set_enabled(prev_); }
  AutoGradMode(const AutoGradMode&) = delete;
  AutoGradMode& operator=(const AutoGradMode&) = delete;

 private:
  bool prev_;
};

class NoGradGuard : public AutoGradMode {
 public:
  NoGradGuard() : AutoGradMode(false) {}
};

namespace autograd {

class Node;
struct Edge {
  std::shared_ptr<Node> fn;    // null: that input needs no gradient
  ScalarType type = kFloat32;  // the input's dtype, which its gradient is cast to
};

// A tensor kept for backward. It remembers the storage version at save time: if an
// in-place op changes the tensor before backward, unpack() throws naming the op.
class SavedTensor {
 public:
  SavedTensor() = default;
  // `is_output`: the tensor is the node's own result; it is kept without its grad_fn so
  // the node does not own itself.
  SavedTensor(const Tensor& t, bool is_output = false);
  Tensor unpack(const Node& owner) const;

 private:
  Tensor t_;
  std::uint32_t version_ = 0;
  bool defined_ = false;
};

class Node {
 public:
  virtual ~Node() = default;
  // Gradients for each input (undefined where an input needs none), given the gradient
  // of this node's output.
  virtual std::vector<Tensor> apply(const Tensor& grad_output) = 0;
  virtual std::string name() const = 0;
  // Frees saved tensors after a backward pass that does not retain the graph.
  virtual void release() {}
  const std::vector<Edge>& next_edges() const { return next_; }
  // Whether input `i` wants a gradient (PyTorch's needs_input_grad): a backward function
  // computes none for an input that does not, saving the memory and the work.
  bool needs_input_grad(std::size_t i) const { return i < next_.size() && next_[i].fn != nullptr; }
  std::vector<Edge>& mutable_next_edges() { return next_; }
  std::uint64_t sequence_nr() const { return seq_; }
  void set_sequence_nr(std::uint64_t s) { seq_ = s; }
  // The gradient for input i in that input's dtype (its edge's type), as PyTorch's engine
  // validates its outputs: a float32 gradient for a bfloat16 input of autocast arrives in
  // bfloat16.
  Tensor gradient_for_input(std::size_t i, const Tensor& g) const;
  // The non-leaf output whose gradient backward keeps (Tensor::retain_grad), or none.
  void retain_output_grad(const std::shared_ptr<TensorImpl>& t) { retained_ = t; }
  std::shared_ptr<TensorImpl> retained_output() const { return retained_.lock(); }

 private:
  std::vector<Edge> next_;
  std::uint64_t seq_ = 0;
  std::weak_ptr<TensorImpl> retained_;
};

// The node that adds an incoming gradient into a leaf's .grad.
class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(std::weak_ptr<TensorImpl> leaf) : leaf_(std::move(leaf)) {}
  std::vector<Tensor> apply(const Tensor& grad_output) override;
  std::string name() const override { return "AccumulateGrad"; }

 private:
  std::weak_ptr<TensorImpl> leaf_;
};

using BackwardFn = std::function<std::vector<Tensor>(const Tensor& grad_output, const Node& self)>;

// A node whose backward is a function; most ops use it.
class FunctionNode final : public Node {
 public:
  FunctionNode(std::string name, BackwardFn fn) : name_(std::move(name)), fn_(std::move(fn)) {}
  std::vector<Tensor> apply(const Tensor& grad_output) override;
  std::string name() const override { return name_; }
  void release() override {
    fn_ = nullptr;
    released_ = true;
  }

 private:
  std::string name_;
  BackwardFn fn_;
  bool released_ = false;
};

// Whether an op on these inputs must record a node (grad mode on, some input requires grad).
bool needs_grad(const std::vector<Tensor>& inputs);
// Attach a node named `name` to `result` with edges to `inputs`; `fn` returns one gradient
// per input. Does nothing when needs_grad(inputs) is false.
void record(Tensor& result, const char* name, const std::vector<Tensor>& inputs, BackwardFn fn);
// The edge by which a gradient reaches `t` (its grad_fn, or its leaf's AccumulateGrad).
Edge gradient_edge(const Tensor& t);
// Run backward from `root` (PyTorch's torch.autograd.backward).
void backward(const Tensor& root, const Tensor& grad, bool retain_graph);
// Reduce `grad` to `shape` by summing the broadcast dimensions.
Tensor sum_to(const Tensor& grad, const Shape& shape);
// After an in-place op overwrote every element of a tensor with history: it keeps
// requiring grad, through a node `name` that sends that history a zero gradient (PyTorch's
// FillBackward0); a view's base takes a zero gradient for the view's region (rebase_view).
// Does nothing for a tensor without history or with grad mode off.
void record_overwrite(Tensor& self, const char* name);
// After an in-place op wrote `written` (the op's out-of-place result, or undefined for a
// constant fill) into `view`, a view of another tensor: the base's history becomes
// CopySlices (the written values inside the view, its old history outside) and the
// view's a view of that. Does nothing when neither the base nor `written` needs grad.
void rebase_view(Tensor& view, const Tensor& written);
// Refuse an in-place write into `self` that autograd cannot allow; called by every
// in-place op before it writes.
void check_inplace(const Tensor& self);

}  // namespace autograd
}  // namespace memlens
