#include "memlens/tensor/nn.hpp"

#include <cmath>

#include "memlens/tensor/autograd.hpp"
#include "memlens/tensor/nn_functional.hpp"
#include "autocast.hpp"
#include "tensor_internal.hpp"

namespace memlens::nn {

using autograd::Node;
using autograd::SavedTensor;
using Grads = std::vector<Tensor>;

std::vector<Tensor> Module::parameters() const {
  MEMLENS_API_ENTRY();
  std::vector<Tensor> out;
  for (auto& [name, p] : named_parameters()) out.push_back(p);
  return out;
}

std::vector<std::pair<std::string, Tensor>> Module::named_parameters() const {
  MEMLENS_API_ENTRY();
  std::vector<std::pair<std::string, Tensor>> out = params_;
  for (auto& [prefix, child] : children_)
    for (auto& [name, p] : child->named_parameters()) out.emplace_back(prefix + "." + name, p);
  return out;
}

void Module::zero_grad() {
  MEMLENS_API_ENTRY();
  for (auto& p : parameters()) p.set_grad(Tensor());
}

void Module::to(const Device& d) {
  MEMLENS_API_ENTRY();
  NoGradGuard guard;
  // Swap the storage under the same TensorImpl (PyTorch's `param.data = ...`), so every
  // handle to it, e.g. Linear::weight, sees the moved data.
  auto move = [&](Tensor& t) {
    Tensor moved = t.to(d);
    if (moved.is_same(t)) return;
    TensorImpl* impl = t.unsafe_impl();
    impl->storage = moved.storage();
    impl->strides = moved.strides();
    impl->offset = moved.storage_offset();
    impl->grad = nullptr;
    detail::emit_category(t, instrument::Category::Parameter);  // the new storage holds the module's state too
  };
  for (auto& [name, p] : params_) move(p);
  for (auto& [name, b] : buffers_) move(b);
  for (auto& [name, child] : children_) child->to(d);
}

// A buffer (batch norm's running statistics) is the module's state as its parameters are,
// kept with them for the whole run: the trace names it a parameter.
Tensor& Module::register_buffer(std::string name, Tensor t) {
  MEMLENS_API_ENTRY();
  detail::emit_category(t, instrument::Category::Parameter);
  buffers_.emplace_back(std::move(name), std::move(t));
  return buffers_.back().second;
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [name, child] : children_) child->train(on);
}

Tensor& Module::register_parameter(std::string name, Tensor t) {
  MEMLENS_API_ENTRY();
  t.requires_grad_(true);
  detail::emit_category(t, instrument::Category::Parameter);
  params_.emplace_back(std::move(name), std::move(t));
  return params_.back().second;
}

void Module::register_module(std::string name, std::shared_ptr<Module> m) {
  MEMLENS_API_ENTRY();
  children_.emplace_back(std::move(name), std::move(m));
}

Linear::Linear(std::int64_t in, std::int64_t out, bool with_bias) : Module(Library{}) {
  double bound = 1.0 / std::sqrt(static_cast<double>(in));
  {
    NoGradGuard guard;
    weight = rand({out, in}) * (2 * bound) - bound;
    if (with_bias) bias = rand({out}) * (2 * bound) - bound;
  }
  register_parameter("weight", weight);
  if (with_bias) register_parameter("bias", bias);
}

Tensor Module::operator()(const Tensor& x) {
  MEMLENS_API_ENTRY();
  if (library_) return forward(x);
  instrument::UserCode user;
  return forward(x);
}

Tensor Linear::forward(const Tensor& x) {
  MEMLENS_API_ENTRY();
  return functional::linear(x, weight, bias);
}

Tensor GELU::forward(const Tensor& x) {
  MEMLENS_API_ENTRY();
  return functional::gelu(x, approximate_);
}
Tensor SiLU::forward(const Tensor& x) {
  MEMLENS_API_ENTRY();
  return functional::silu(x);
}
Tensor Softmax::forward(const Tensor& x) {
  MEMLENS_API_ENTRY();
  return softmax(x, dim_);
}
Tensor LogSoftmax::forward(const Tensor& x) {
  MEMLENS_API_ENTRY();
  return log_softmax(x, dim_);
}

Dropout::Dropout(double p) : Module(Library{}), p_(p) {
  if (!(p >= 0 && p <= 1)) throw Error("dropout probability has to be between 0 and 1, but got " + std::to_string(p));
}

Tensor Dropout::forward(const Tensor& x) {
  MEMLENS_API_ENTRY();
  return functional::dropout(x, p_, is_training());
}

Embedding::Embedding(std::int64_t num_embeddings, std::int64_t dim, std::optional<std::int64_t> padding_idx)
    : Module(Library{}), padding_idx_(padding_idx) {
  if (num_embeddings < 1 || dim < 1) throw ShapeError("Embedding: num_embeddings and dim must be positive");
  if (padding_idx && (*padding_idx >= num_embeddings || *padding_idx < -num_embeddings))
    throw ShapeError("Padding_idx must be within num_embeddings");
  {
    NoGradGuard guard;
    weight = randn({num_embeddings, dim});
    if (padding_idx) weight.select(0, *padding_idx).zero_();  // select counts a negative index from the end
  }
  register_parameter("weight", weight);
}

Tensor Embedding::forward(const Tensor& indices) {
  MEMLENS_API_ENTRY();
  return functional::embedding(indices, weight, padding_idx_);
}

LayerNorm::LayerNorm(Shape normalized_shape, double eps, bool elementwise_affine)
    : Module(Library{}), shape_(std::move(normalized_shape)), eps_(eps) {
  if (shape_.empty()) throw ShapeError("LayerNorm: normalized_shape must name at least one dim");
  if (!elementwise_affine) return;
  {
    NoGradGuard guard;
    weight = ones(shape_);
    bias = zeros(shape_);
  }
  register_parameter("weight", weight);
  register_parameter("bias", bias);
}

Tensor LayerNorm::forward(const Tensor& x) {
  MEMLENS_API_ENTRY();
  return functional::layer_norm(x, shape_, weight, bias, eps_);
}

Conv2d::Conv2d(std::int64_t in, std::int64_t out, std::int64_t kernel, const Conv2dOptions& options)
    : Module(Library{}), options_(options) {
  if (in < 1 || out < 1 || kernel < 1) throw ShapeError("Conv2d: channels and kernel size must be positive");
  if (options.groups < 1 || in % options.groups != 0 || out % options.groups != 0)
    throw ShapeError("Conv2d: in_channels and out_channels must be divisible by groups");
  const std::int64_t group_in = in / options.groups;
  double bound = 1.0 / std::sqrt(static_cast<double>(group_in * kernel * kernel));
  {
    NoGradGuard guard;
    weight = rand({out, group_in, kernel, kernel}) * (2 * bound) - bound;
    if (options.bias) bias = rand({out}) * (2 * bound) - bound;
  }
  register_parameter("weight", weight);
  if (options.bias) register_parameter("bias", bias);
}

Conv2d::Conv2d(std::int64_t in, std::int64_t out, std::int64_t kernel, std::int64_t stride, std::int64_t padding, bool with_bias)
    : Conv2d(in, out, kernel, Conv2dOptions{.stride = stride, .padding = padding, .bias = with_bias}) {}

Tensor Conv2d::forward(const Tensor& x) {
  MEMLENS_API_ENTRY();
  return functional::conv2d(x, weight, bias, options_.stride, options_.padding, options_.dilation, options_.groups);
}

Tensor MaxPool2d::forward(const Tensor& x) {
  MEMLENS_API_ENTRY();
  return functional::max_pool2d(x, kernel_, stride_, padding_, ceil_mode_);
}

Tensor AvgPool2d::forward(const Tensor& x) {
  MEMLENS_API_ENTRY();
  return functional::avg_pool2d(x, kernel_, stride_, padding_, ceil_mode_, count_include_pad_);
}

BatchNorm2d::BatchNorm2d(std::int64_t channels, double eps, double momentum) : Module(Library{}), eps_(eps), momentum_(momentum) {
  if (channels < 1) throw ShapeError("BatchNorm2d: channels must be positive");
  {
    NoGradGuard guard;
    weight = ones({channels});
    bias = zeros({channels});
    running_mean = zeros({channels});
    running_var = ones({channels});
    num_batches_tracked = zeros({}, kInt64);
  }
  register_parameter("weight", weight);
  register_parameter("bias", bias);
  register_buffer("running_mean", running_mean);
  register_buffer("running_var", running_var);
  register_buffer("num_batches_tracked", num_batches_tracked);
}

Tensor BatchNorm2d::forward(const Tensor& x) {
  MEMLENS_API_ENTRY();
  if (x.dim() != 4) throw ValueError("expected 4D input (got " + std::to_string(x.dim()) + "D input)");
  if (is_training()) {
    NoGradGuard no_grad;
    num_batches_tracked.add_(1);
  }
  return functional::batch_norm(x, running_mean, running_var, weight, bias, is_training(), momentum_, eps_);
}

double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type) {
  MEMLENS_API_ENTRY();
  NoGradGuard guard;
  double total = 0;
  const bool inf = std::isinf(norm_type);
  for (const Tensor& p : parameters) {
    Tensor g = p.grad();
    if (!g.defined()) continue;
    double n = inf ? g.abs().max().item<double>() : g.abs().pow(norm_type).sum().item<double>();
    total = inf ? std::max(total, n) : total + n;
  }
  if (!inf) total = std::pow(total, 1 / norm_type);
  // A NaN gradient makes the norm NaN and so every gradient NaN, as PyTorch's
  // clamp(max_norm / total, max=1) does: the step is then visibly broken, not silently kept.
  double coef = max_norm / (total + 1e-6);
  if (!(coef >= 1))
    for (const Tensor& p : parameters)
      if (Tensor g = p.grad(); g.defined()) g.mul_(coef);
  return total;
}

Sequential::Sequential(std::initializer_list<std::shared_ptr<Module>> modules) : Module(Library{}) {
  for (auto& m : modules) push_back(m);
}

Sequential& Sequential::push_back(std::shared_ptr<Module> m) {
  register_module(std::to_string(layers_.size()), m);
  layers_.push_back(std::move(m));
  return *this;
}

Tensor Sequential::forward(const Tensor& x) {
  MEMLENS_API_ENTRY();
  Tensor h = x;
  for (auto& m : layers_) h = (*m)(h);  // a module the user wrote runs as user code
  return h;
}

namespace init {
namespace {
// fan_in and fan_out of a weight [out, in, kernel...], as torch.nn.init computes them.
std::pair<double, double> fans(const Tensor& t) {
  if (t.dim() < 2) throw ShapeError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions");
  double receptive = 1;
  for (std::int64_t d = 2; d < t.dim(); ++d) receptive *= static_cast<double>(t.size(d));
  return {static_cast<double>(t.size(1)) * receptive, static_cast<double>(t.size(0)) * receptive};
}
}  // namespace

Tensor& kaiming_uniform_(Tensor& t, double a) {
  MEMLENS_API_ENTRY();
  NoGradGuard guard;
  double bound = std::sqrt(2.0 / (1 + a * a)) * std::sqrt(3.0 / fans(t).first);
  return t.uniform_(-bound, bound);
}

Tensor& xavier_uniform_(Tensor& t, double gain) {
  MEMLENS_API_ENTRY();
  NoGradGuard guard;
  auto [in, out] = fans(t);
  double bound = gain * std::sqrt(6.0 / (in + out));
  return t.uniform_(-bound, bound);
}

Tensor& zeros_(Tensor& t) {
  MEMLENS_API_ENTRY();
  NoGradGuard guard;
  return t.zero_();
}

Tensor& ones_(Tensor& t) {
  MEMLENS_API_ENTRY();
  NoGradGuard guard;
  return t.fill_(1);
}
}  // namespace init

namespace {

void check_reduction(const std::string& reduction, const std::string& loss) {
  if (reduction != "mean" && reduction != "sum" && reduction != "none")
    throw ValueError(loss + ": " + reduction + " is not a valid value for reduction (mean, sum, none)");
}

// PyTorch's nll_loss over the class dim 1 of [N, C, d...], or of one unbatched row [C]:
// the target's log-probability picked at each position by gather (no one-hot of positions
// by classes is ever built), weighted by its class, positions whose target is ignore_index
// left out; with label smoothing (cross-entropy's) mixed with the classes' mean. "mean"
// divides by the counted positions' weights (their number when unweighted).
Tensor class_loss(const Tensor& logp, const Tensor& target, const std::string& loss, const ClassLossOptions& o) {
  if (logp.dim() == 0) throw ShapeError(loss + ": expected input of shape (N, C, ...) or (C), got []");
  check_reduction(o.reduction, loss);
  const bool batched = logp.dim() > 1;
  const std::int64_t classes = logp.size(batched ? 1 : 0);
  if (o.weight.defined() && o.weight.sizes() != Shape{classes})
    throw Error(loss + ": weight tensor should be defined either for all " + std::to_string(classes) +
                " classes or no classes but got weight tensor of shape: " + shape_str(o.weight.sizes()));
  Shape want = logp.sizes();
  want.erase(want.begin() + (batched ? 1 : 0));
  if (target.dtype() != kInt64)
    throw TypeError(loss + ": expected target of dtype int64 (class indices) or class probabilities of the input's shape, got " +
                    std::string(type_name(target.dtype())) + " " + shape_str(target.sizes()));
  if (target.sizes() != want)
    throw ShapeError(loss + ": expected target of shape " + shape_str(want) + ", got " + shape_str(target.sizes()));
  Tensor lp = batched ? logp : logp.unsqueeze(0), t = batched ? target : target.reshape({1});
  bool ignoring = false;
  if (t.numel() > 0) {
    const std::int64_t lo = t.min().item<std::int64_t>(), hi = t.max().item<std::int64_t>();
    ignoring = o.ignore_index >= lo && o.ignore_index <= hi;
    if (ignoring || lo < 0 || hi >= classes) {  // only then may a position be out of bounds: find it
      Tensor bad = logical_or(t.lt(0), t.ge(classes));
      if (ignoring) bad = logical_and(bad, t.ne(o.ignore_index));
      if (bad.sum().item<std::int64_t>() > 0)
        throw IndexError(loss + ": Target " + std::to_string(t.masked_select(bad)[0].item<std::int64_t>()) +
                         " is out of bounds (" + std::to_string(classes) + " classes).");
    }
  }
  const double count = static_cast<double>(std::max<std::int64_t>(t.numel(), 1));
  if (!o.weight.defined() && o.label_smoothing == 0 && !ignoring) {  // every position counts once
    if (o.reduction == "mean") return -lp.gather(1, t.unsqueeze(1)).sum() / count;
    Tensor per = -lp.gather(1, t.unsqueeze(1)).squeeze(1);
    return o.reduction == "sum" ? per.sum() : batched ? per : per.squeeze(0);
  }
  Tensor ignored = ignoring ? t.eq(o.ignore_index) : Tensor();
  Tensor safe = ignoring ? t.masked_fill(ignored, 0) : t;
  Tensor w = o.weight.defined() ? o.weight.index_select(0, safe.reshape({-1})).view(safe.sizes())
                                : ones_like(safe, TensorOptions(lp.dtype()).device(lp.device()));
  if (ignoring) w = w.masked_fill(ignored, 0);
  Tensor per = -lp.gather(1, safe.unsqueeze(1)).squeeze(1) * w;
  if (o.label_smoothing > 0) {
    Shape along(static_cast<std::size_t>(lp.dim()), 1);
    along[1] = classes;
    Tensor smooth = -(o.weight.defined() ? lp * o.weight.view(along) : lp).sum({1});
    if (ignoring) smooth = smooth.masked_fill(ignored, 0);
    per = per * (1 - o.label_smoothing) + smooth * (o.label_smoothing / static_cast<double>(classes));
  }
  if (o.reduction == "none") return batched ? per : per.squeeze(0);
  if (o.reduction == "sum") return per.sum();
  return per.sum() / w.sum();
}

}  // namespace

Tensor NLLLoss::operator()(const Tensor& log_probs, const Tensor& target) const {
  MEMLENS_API_ENTRY();
  if (options_.label_smoothing != 0) throw Error("NLLLoss: label_smoothing is cross-entropy's option");
  if (auto r = autocast::run(
          "nll_loss",
          [&](const Tensor& lp, const Tensor& t, const Tensor& w) {
            ClassLossOptions o = options_;
            o.weight = w;
            return class_loss(lp, t, "NLLLoss", o);
          },
          log_probs, target, options_.weight))
    return *r;
  return class_loss(log_probs, target, "NLLLoss", options_);
}

Tensor BCEWithLogitsLoss::operator()(const Tensor& logits, const Tensor& target) const {
  MEMLENS_API_ENTRY();
  if (auto r = autocast::run(
          "binary_cross_entropy_with_logits",
          [](const Tensor& x, const Tensor& y, const Tensor& w) { return BCEWithLogitsLoss(w)(x, y); }, logits, target,
          pos_weight_))
    return *r;
  if (logits.sizes() != target.sizes())
    throw ValueError("Target size (" + shape_str(target.sizes()) + ") must be the same as input size (" +
                     shape_str(logits.sizes()) + ")");
  // With pos_weight w: (1 - y) x + (1 + (w - 1) y) softplus(-x), softplus(-x) computed as
  // log(1 + exp(-|x|)) + max(-x, 0); without it, the same at w = 1.
  const Tensor& w = pos_weight_;
  Tensor out;
  {
    NoGradGuard no_grad;
    Tensor softplus = ((-logits.abs()).exp() + 1).log() + (-logits).clamp(0);
    out = (w.defined() ? (1 - target) * logits + (target * (w - 1) + 1) * softplus
                       : logits.clamp(0) - logits * target + ((-logits.abs()).exp() + 1).log())
              .mean();
  }
  // The loss's own derivative, ((1 + (w - 1) y) sigmoid(x) - w y) / N (sigmoid(x) - y
  // unweighted), holds at x = 0 too, where the stable form's clamp and |x| have kinks whose
  // one-sided gradients are not the loss's.
  const double count = static_cast<double>(std::max<std::int64_t>(logits.numel(), 1));
  autograd::record(out, "BinaryCrossEntropyWithLogitsBackward0", {logits, target},
                   [x = SavedTensor(logits), y = SavedTensor(target), w, count](const Tensor& g, const Node& n) {
                     Tensor xv = x.unpack(n), yv = y.unpack(n), per = g / count;
                     Tensor dx = w.defined() ? (yv * (w - 1) + 1) * xv.sigmoid() - w * yv : xv.sigmoid() - yv;
                     Tensor dy = w.defined() ? -xv + (w - 1) * (((-xv.abs()).exp() + 1).log() + (-xv).clamp(0)) : -xv;
                     return Grads{dx * per, n.needs_input_grad(1) ? dy * per : Tensor()};
                   });
  return out;
}

Tensor MSELoss::operator()(const Tensor& input, const Tensor& target) const {
  MEMLENS_API_ENTRY();
  if (auto r = autocast::run(
          "mse_loss", [&](const Tensor& in, const Tensor& t) { return (*this)(in, t); }, input, target))
    return *r;
  if (input.sizes() != target.sizes())
    throw ShapeError("MSELoss: input size " + shape_str(input.sizes()) + " and target size " + shape_str(target.sizes()) +
                     " differ; broadcasting them would compare every pair");
  return (input - target).pow(2).mean();
}

Tensor CrossEntropyLoss::operator()(const Tensor& logits, const Tensor& target) const {
  MEMLENS_API_ENTRY();
  const ClassLossOptions& o = options_;
  if (logits.dim() == 0) throw ShapeError("CrossEntropyLoss: expected logits of shape (N, C, ...) or (C), got []");
  if (o.label_smoothing < 0 || o.label_smoothing > 1)
    throw Error("CrossEntropyLoss: label_smoothing must be between 0.0 and 1.0. Got: " + std::to_string(o.label_smoothing));
  const std::int64_t class_dim = logits.dim() > 1 ? 1 : 0, classes = logits.size(class_dim);
  if (!target.is_floating_point() || target.sizes() != logits.sizes())
    return class_loss(log_softmax(logits, class_dim), target, "CrossEntropyLoss", o);
  // Class probabilities (a float target of the logits' shape), smoothed towards uniform:
  // -sum(w p log_softmax) over the classes, "mean" over the other positions.
  check_reduction(o.reduction, "CrossEntropyLoss");
  Tensor p = o.label_smoothing > 0 ? target * (1 - o.label_smoothing) + o.label_smoothing / static_cast<double>(classes) : target;
  Tensor lp = log_softmax(logits, class_dim);
  if (o.weight.defined()) {
    Shape along(static_cast<std::size_t>(logits.dim()), 1);
    along[static_cast<std::size_t>(class_dim)] = classes;
    lp = lp * o.weight.view(along);
  }
  if (o.reduction == "mean")
    return -(p * lp).sum() / static_cast<double>(std::max<std::int64_t>(logits.numel() / std::max<std::int64_t>(classes, 1), 1));
  Tensor per = -(p * lp).sum({class_dim});
  return o.reduction == "sum" ? per.sum() : per;
}

}  // namespace memlens::nn
