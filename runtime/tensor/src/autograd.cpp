// The autograd engine: recording nodes, the leaf rules, saved-tensor version checks and
// the backward pass.
#include "memlens/tensor/autograd.hpp"

#include <atomic>
#include <map>
#include <queue>
#include <unordered_map>

#include "tensor_internal.hpp"

namespace memlens {

namespace {
thread_local bool grad_enabled = true;
std::atomic<std::uint64_t> next_sequence{0};

// The geometry of a view inside its (contiguous) base: what a gradient of the base's shape
// is read or written through.
struct ViewGeometry {
  Shape sizes, strides;
  std::int64_t offset;
};

ViewGeometry geometry_in_base(const TensorImpl& view, const TensorImpl& base) {
  return {view.sizes, view.strides, view.offset - base.offset};
}

// A base-shaped gradient from a gradient of the view: zero outside the view, and the sum
// of the view's elements that share a location (an expanded dim) inside it.
Tensor scatter_to_base(const Tensor& g, const Shape& base_sizes, const ViewGeometry& at) {
  Shape sizes = at.sizes, summed;
  for (std::size_t d = 0; d < sizes.size(); ++d)
    if (at.strides[d] == 0 && sizes[d] > 1) {
      summed.push_back(static_cast<std::int64_t>(d));
      sizes[d] = 1;
    }
  Tensor r = zeros(base_sizes, TensorOptions(g.dtype()).device(g.device()));
  detail::copy_into(detail::as_strided_alias(r, sizes, at.strides, at.offset), summed.empty() ? g : g.sum(summed, true));
  return r;
}

// The view's history rebuilt as a view of its base's current one.
std::shared_ptr<autograd::Node> view_of_base_history(const TensorImpl& view) {
  const TensorImpl& base = *view.view_base;
  auto node = std::make_shared<autograd::FunctionNode>(
      "AsStridedBackward0", [base_sizes = base.sizes, at = geometry_in_base(view, base)](const Tensor& g, const autograd::Node&) {
        return std::vector<Tensor>{scatter_to_base(g, base_sizes, at)};
      });
  node->set_sequence_nr(next_sequence.fetch_add(1, std::memory_order_relaxed));
  node->mutable_next_edges().push_back(autograd::gradient_edge(Tensor(view.view_base)));
  return node;
}

// A tensor's grad_fn, rebuilding a view's when its base's history has changed since (see
// TensorImpl::base_history). Only contiguous bases: every public root is one.
const std::shared_ptr<autograd::Node>& current_grad_fn(TensorImpl& impl) {
  TensorImpl* base = impl.view_base.get();
  if (base && base->grad_fn && base->grad_fn.get() != impl.base_history && Tensor(impl.view_base).is_contiguous()) {
    impl.grad_fn = view_of_base_history(impl);
    impl.base_history = base->grad_fn.get();
  }
  return impl.grad_fn;
}

std::string tensor_desc(const Tensor& t) {
  std::string type = t.dtype() == kFloat32    ? "FloatTensor"
                     : t.dtype() == kFloat64  ? "DoubleTensor"
                     : t.dtype() == kInt64    ? "LongTensor"
                     : t.dtype() == kInt32    ? "IntTensor"
                     : t.dtype() == kUInt8    ? "ByteTensor"
                     : t.dtype() == kFloat16  ? "HalfTensor"
                     : t.dtype() == kBFloat16 ? "BFloat16Tensor"
                                              : "BoolTensor";
  return "[torch." + std::string(t.device().is_cpu() ? "" : t.device().str().substr(0, t.device().str().find(':')) + ".") + type +
         " " + shape_str(t.sizes()) + "]";
}
}  // namespace

bool GradMode::is_enabled() { return grad_enabled; }
void GradMode::set_enabled(bool on) { grad_enabled = on; }

// ---- Tensor's autograd surface

bool Tensor::requires_grad() const { return defined() && (impl().requires_grad || current_grad_fn(impl()) != nullptr); }

Tensor& Tensor::requires_grad_(bool r) {
  if (r && !is_floating_point())
    throw AutogradError("only Tensors of floating point dtype can require gradients (got " + std::string(type_name(dtype())) +
                        ")");
  if (!is_leaf() && r) return *this;  // a computed tensor already requires grad: nothing to change
  if (!is_leaf())
    throw AutogradError(
        "you can only change requires_grad flags of leaf variables. If you want to use a computed "
        "variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach().");
  impl().requires_grad = r;
  return *this;
}

bool Tensor::is_leaf() const { return current_grad_fn(impl()) == nullptr; }

Tensor Tensor::grad() const { return impl().grad ? Tensor(impl().grad) : Tensor(); }

void Tensor::set_grad(const Tensor& g) {
  if (g.defined() && g.sizes() != sizes())
    throw ShapeError("assigned grad has data of a different size: " + shape_str(g.sizes()) + " vs " + shape_str(sizes()));
  impl().grad = g.defined() ? g.impl_ptr() : nullptr;
}

std::shared_ptr<autograd::Node> Tensor::grad_fn() const { return current_grad_fn(impl()); }

void Tensor::backward(const Tensor& gradient, bool retain_graph) const {
  MEMLENS_API_ENTRY();
  autograd::backward(*this, gradient, retain_graph);
}

void Tensor::retain_grad() const {
  MEMLENS_API_ENTRY();
  if (auto fn = grad_fn()) fn->retain_output_grad(impl_ptr());
}

namespace autograd {

SavedTensor::SavedTensor(const Tensor& t, bool is_output) : defined_(t.defined()) {
  if (!t.defined()) return;
  version_ = t._version();
  t_ = is_output ? detail::as_strided_alias(t, t.sizes(), t.strides(), t.storage_offset()) : t;
  // A computed tensor kept for backward is an activation. Leaves keep their own role, and
  // so do views (`weight.t()` saved by mm is still the parameter's storage).
  if ((is_output || t.grad_fn()) && !t.is_view()) detail::emit_category(t, instrument::Category::Activation);
}

Tensor SavedTensor::unpack(const Node& owner) const {
  if (!defined_) return Tensor();
  if (!t_.defined())
    throw AutogradError(
        "Trying to backward through the graph a second time (or directly access saved tensors after "
        "they have already been freed). Saved intermediate values of the graph are freed when you "
        "call .backward(). Specify retain_graph=true if you need to backward through the graph a "
        "second time.");
  if (t_._version() != version_)
    throw AutogradError(
        "one of the variables needed for gradient computation has been modified by an inplace "
        "operation: " +
        tensor_desc(t_) + ", saved by " + owner.name() + ", is at version " + std::to_string(t_._version()) +
        "; expected version " + std::to_string(version_) + " instead.");
  return t_;
}

std::vector<Tensor> FunctionNode::apply(const Tensor& grad_output) {
  if (released_)
    throw AutogradError(
        "Trying to backward through the graph a second time (or directly access saved tensors after "
        "they have already been freed). Saved intermediate values of the graph are freed when you "
        "call .backward(). Specify retain_graph=true if you need to backward through the graph a "
        "second time.");
  return fn_(grad_output, *this);
}

std::vector<Tensor> AccumulateGrad::apply(const Tensor& g) {
  auto leaf = leaf_.lock();
  if (!leaf) return {};
  if (!leaf->grad) {
    // Own a fresh, contiguous copy: `g` may be a broadcast view or a tensor the user holds.
    Tensor grad = g.clone();
    detail::emit_category(grad, instrument::Category::Gradient);
    leaf->grad = grad.impl_ptr();
  } else {
    Tensor acc(leaf->grad);
    acc.add_(g);
  }
  return {};
}

bool needs_grad(const std::vector<Tensor>& inputs) {
  if (!GradMode::is_enabled()) return false;
  for (auto& t : inputs)
    if (t.requires_grad()) return true;
  return false;
}

Edge gradient_edge(const Tensor& t) {
  if (!t.requires_grad()) return {};
  if (auto fn = t.grad_fn()) return {fn, t.dtype()};
  TensorImpl* impl = t.unsafe_impl();
  auto acc = impl->grad_accumulator.lock();
  if (!acc) {
    acc = std::make_shared<AccumulateGrad>(t.impl_ptr());
    impl->grad_accumulator = acc;
  }
  return {acc, t.dtype()};
}

void record(Tensor& result, const char* name, const std::vector<Tensor>& inputs, BackwardFn fn) {
  if (!needs_grad(inputs)) return;
  auto node = std::make_shared<FunctionNode>(name, std::move(fn));
  node->set_sequence_nr(next_sequence.fetch_add(1, std::memory_order_relaxed));
  for (auto& in : inputs) node->mutable_next_edges().push_back(gradient_edge(in));
  result.unsafe_impl()->grad_fn = std::move(node);
}

Tensor Node::gradient_for_input(std::size_t i, const Tensor& g) const {
  if (i >= next_.size() || !g.defined() || g.dtype() == next_[i].type || !is_floating_point(next_[i].type)) return g;
  return g.to(next_[i].type);
}

Tensor sum_to(const Tensor& grad, const Shape& shape) {
  if (grad.sizes() == shape) return grad;
  std::int64_t lead = grad.dim() - static_cast<std::int64_t>(shape.size());
  Shape dims;
  for (std::int64_t i = 0; i < grad.dim(); ++i)
    if (i < lead || (shape[static_cast<std::size_t>(i - lead)] == 1 && grad.size(i) != 1)) dims.push_back(i);
  Tensor r = dims.empty() ? grad : grad.sum(dims, true);
  return r.reshape(shape);
}

void record_overwrite(Tensor& self, const char* name) {
  if (!GradMode::is_enabled()) return;
  if (self.is_view()) {
    rebase_view(self, Tensor());
    return;
  }
  if (!self.grad_fn()) return;
  Tensor history = detail::as_strided_alias(self, self.sizes(), self.strides(), self.storage_offset());
  history.unsafe_impl()->grad_fn = self.grad_fn();
  record(self, name, {history}, [](const Tensor& g, const Node&) { return std::vector<Tensor>{zeros_like(g)}; });
}

void rebase_view(Tensor& view, const Tensor& written) {
  TensorImpl* v = view.unsafe_impl();
  Tensor base(v->view_base);
  if (!needs_grad({base, written})) return;
  if (!base.is_contiguous())
    throw AutogradError(
        "an in-place operation on a view of a non-contiguous base that requires grad is not supported; "
        "use the out-of-place operation instead");
  // PyTorch's CopySlices: the base's gradient goes to the written values inside the view
  // and to the base's old history outside it.
  record(base, "CopySlices", {base, written},
         [at = geometry_in_base(*v, *base.unsafe_impl())](const Tensor& g, const Node& self) {
           std::vector<Tensor> grads(2);
           Tensor whole = g.contiguous();
           if (self.needs_input_grad(1)) grads[1] = detail::as_strided_alias(whole, at.sizes, at.strides, at.offset).clone();
           if (self.needs_input_grad(0)) {
             grads[0] = g.clone();
             detail::as_strided_alias(grads[0], at.sizes, at.strides, at.offset).zero_();
           }
           return grads;
         });
  v->grad_fn = view_of_base_history(*v);
  v->base_history = base.unsafe_impl()->grad_fn.get();
}

void check_inplace(const Tensor& self) {
  // An expanded dim (stride 0) makes several elements one memory location: writing them
  // all would write it several times (PyTorch's internal-overlap check).
  for (std::int64_t d = 0; d < self.dim(); ++d)
    if (self.stride(d) == 0 && self.size(d) > 1)
      throw Error(
          "unsupported operation: more than one element of the written-to tensor refers to a single memory "
          "location. Please clone() the tensor before performing the operation.");
  if (!GradMode::is_enabled()) return;
  TensorImpl* impl = self.unsafe_impl();
  if (impl->view_base) {
    TensorImpl* base = impl->view_base.get();
    if (base->requires_grad && base->grad_fn == nullptr)
      throw AutogradError(
          "a view of a leaf Variable that requires grad is being used in an in-place operation. "
          "(leaf: tensor " +
          std::to_string(base->id) + " of shape " + shape_str(base->sizes) + "; view of shape " + shape_str(self.sizes()) + ")");
  }
  if (impl->requires_grad && impl->grad_fn == nullptr)
    throw AutogradError("a leaf Variable that requires grad is being used in an in-place operation. (leaf: tensor " +
                        std::to_string(impl->id) + " of shape " + shape_str(self.sizes()) + ")");
}

void backward(const Tensor& root, const Tensor& grad, bool retain_graph) {
  detail::check_defined(root, "backward");
  if (!root.requires_grad()) throw AutogradError("element 0 of tensors does not require grad and does not have a grad_fn");
  Tensor seed = grad;
  if (!seed.defined()) {
    if (root.numel() != 1) throw AutogradError("grad can be implicitly created only for scalar outputs");
    seed = ones_like(root);
  } else if (seed.sizes() != root.sizes()) {
    throw ShapeError("Mismatch in shape: grad_output[0] has a shape of " + shape_str(seed.sizes()) +
                     " and output[0] has a shape of " + shape_str(root.sizes()) + ".");
  }
  NoGradGuard no_grad;
  Edge start = gradient_edge(root);

  // Count how many edges lead into each node, then run nodes once all their inputs are in.
  std::unordered_map<Node*, int> pending;
  std::vector<Node*> stack{start.fn.get()};
  std::vector<Node*> all;
  pending[start.fn.get()] = 0;
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    all.push_back(n);
    for (auto& e : n->next_edges()) {
      if (!e.fn) continue;
      auto [it, fresh] = pending.emplace(e.fn.get(), 0);
      ++it->second;
      if (fresh) stack.push_back(e.fn.get());
    }
  }
  // What backward allocates is its own (PyTorch's memory timeline: AUTOGRAD_DETAIL for
  // gradients in flight, TEMPORARY for what a backward function frees before returning),
  // never the user's unknown; a parameter's .grad is a Gradient (AccumulateGrad).
  instrument::NewStorageCategory temporaries(instrument::Category::Temporary);
  const StorageImpl* user_seed = grad.defined() ? grad.storage().get() : nullptr;  // stays the user's
  auto in_flight = [&](const Tensor& g) {
    if (!g.is_view() && g.storage().get() != user_seed) detail::emit_category(g, instrument::Category::AutogradDetail);
  };
  in_flight(seed);
  std::unordered_map<Node*, Tensor> buffers;
  buffers[start.fn.get()] = seed;
  // Latest-created node first among the ready ones, as PyTorch orders its ready queue.
  auto later = [](Node* a, Node* b) { return a->sequence_nr() < b->sequence_nr(); };
  std::priority_queue<Node*, std::vector<Node*>, decltype(later)> ready(later);
  ready.push(start.fn.get());
  while (!ready.empty()) {
    Node* n = ready.top();
    ready.pop();
    Tensor g = std::move(buffers[n]);
    buffers.erase(n);
    if (auto kept = n->retained_output()) {  // retain_grad(): accumulate, as a leaf's grad does
      if (kept->grad) Tensor(kept->grad).add_(g);
      else {
        Tensor grad = g.clone();
        detail::emit_category(grad, instrument::Category::Gradient);
        kept->grad = grad.impl_ptr();
      }
    }
    std::vector<Tensor> grads = n->apply(g);
    for (std::size_t i = 0; i < n->next_edges().size(); ++i) {
      Node* next = n->next_edges()[i].fn.get();
      if (!next) continue;
      if (i < grads.size() && grads[i].defined()) {
        auto& buf = buffers[next];
        Tensor gi = n->gradient_for_input(i, grads[i]);
        buf = buf.defined() ? buf + gi : gi;
        in_flight(buf);
      }
      if (--pending[next] == 0) {
        if (buffers.count(next)) ready.push(next);
        else {  // no gradient reached it: its inputs get none either
          std::vector<Node*> skip{next};
          while (!skip.empty()) {
            Node* s = skip.back();
            skip.pop_back();
            for (auto& e : s->next_edges())
              if (e.fn && --pending[e.fn.get()] == 0) {
                if (buffers.count(e.fn.get())) ready.push(e.fn.get());
                else skip.push_back(e.fn.get());
              }
          }
        }
      }
    }
  }
  if (!retain_graph)
    for (Node* n : all) n->release();
}

}  // namespace autograd
}  // namespace memlens
