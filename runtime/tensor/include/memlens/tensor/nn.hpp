#pragma once
// A small torch::nn: modules own parameters; losses are functions of tensors.
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "memlens/tensor/nn_functional.hpp"
#include "memlens/tensor/tensor.hpp"

namespace memlens::nn {

class Module {
 public:
  Module() = default;
  virtual ~Module() = default;
  virtual Tensor forward(const Tensor& x) = 0;
  // Out of line, so the call site recorded for the module's ops is the caller's line.
  Tensor operator()(const Tensor& x);
  // Every parameter of this module and its children, in registration order.
  std::vector<Tensor> parameters() const;
  std::vector<std::pair<std::string, Tensor>> named_parameters() const;
  // Parameters and buffers by dotted name ("block0.ln1.weight"), what save() writes.
  std::vector<std::pair<std::string, Tensor>> state_dict() const;
  void zero_grad();
  // Moves parameters to `d` (a real copy when the device differs), as Module::to.
  void to(const Device& d);
  // Training mode (the default) or evaluation, for this module and every child: dropout
  // is the identity when not training.
  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

 protected:
  // The runtime's own modules: their forward is runtime code, so the ops in it are sited
  // at the line that called the module. A module the user writes runs as user code: the
  // ops in its forward are sited at its own lines.
  struct Library {};
  explicit Module(Library) : library_(true) {}
  Tensor& register_parameter(std::string name, Tensor t);
  // State that moves with the module but is not learnt (batch norm's running statistics).
  Tensor& register_buffer(std::string name, Tensor t);
  void register_module(std::string name, std::shared_ptr<Module> m);

 private:
  std::vector<std::pair<std::string, Tensor>> params_, buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
  bool library_ = false;
};

// y = x W^T + b, initialised as PyTorch does: U(-1/sqrt(in), 1/sqrt(in)).
class Linear : public Module {
 public:
  Linear(std::int64_t in_features, std::int64_t out_features, bool bias = true);
  Tensor forward(const Tensor& x) override;
  Tensor weight, bias;
};

class ReLU : public Module {
 public:
  ReLU() : Module(Library{}) {}
  Tensor forward(const Tensor& x) override { return x.relu(); }
};

class GELU : public Module {
 public:
  explicit GELU(std::string approximate = "none") : Module(Library{}), approximate_(std::move(approximate)) {}
  Tensor forward(const Tensor& x) override;

 private:
  std::string approximate_;  // "none" or "tanh", as functional::gelu takes it
};

class SiLU : public Module {
 public:
  SiLU() : Module(Library{}) {}
  Tensor forward(const Tensor& x) override;
};

class Softmax : public Module {
 public:
  explicit Softmax(std::int64_t dim) : Module(Library{}), dim_(dim) {}
  Tensor forward(const Tensor& x) override;

 private:
  std::int64_t dim_;
};

class LogSoftmax : public Module {
 public:
  explicit LogSoftmax(std::int64_t dim) : Module(Library{}), dim_(dim) {}
  Tensor forward(const Tensor& x) override;

 private:
  std::int64_t dim_;
};

class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5);
  Tensor forward(const Tensor& x) override;

 private:
  double p_;
};

// A table of num_embeddings vectors of size dim, initialised from N(0, 1) as PyTorch's;
// the padding_idx row (negative counts from the end) starts at zero and gets no gradient.
class Embedding : public Module {
 public:
  Embedding(std::int64_t num_embeddings, std::int64_t dim, std::optional<std::int64_t> padding_idx = std::nullopt);
  Tensor forward(const Tensor& indices) override;
  Tensor weight;

 private:
  std::optional<std::int64_t> padding_idx_;
};

// PyTorch's MultiheadAttention: one packed input projection (in_proj_weight [3E, E],
// Xavier-uniform; in_proj_bias zeros), heads of E / num_heads, and out_proj. Inputs are
// [T, B, E], or [B, T, E] with batch_first.
class MultiheadAttention : public Module {
 public:
  MultiheadAttention(std::int64_t embed_dim, std::int64_t num_heads, double dropout = 0, bool bias = true,
                     bool batch_first = false);
  // Self-attention: the output of attention(x, x, x) without weights.
  Tensor forward(const Tensor& x) override;
  // The output and, with need_weights, the attention weights averaged over heads
  // ([B, T, S]; undefined without). attn_mask ([T, S]) is PyTorch's: true where a query
  // may NOT attend, or a float added to the scores. With need_weights the scores are
  // made explicitly and kept, as PyTorch does; without, scaled_dot_product_attention.
  std::tuple<Tensor, Tensor> attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                       const Tensor& attn_mask = Tensor(), bool need_weights = true, bool is_causal = false);
  Tensor in_proj_weight, in_proj_bias;
  std::shared_ptr<Linear> out_proj;

 private:
  std::int64_t embed_dim_, num_heads_;
  double dropout_;
  bool batch_first_;
};

// Normalises over the last dims (normalized_shape), with a learnt scale (ones) and shift
// (zeros) when elementwise_affine.
class LayerNorm : public Module {
 public:
  explicit LayerNorm(Shape normalized_shape, double eps = 1e-5, bool elementwise_affine = true);
  Tensor forward(const Tensor& x) override;
  Tensor weight, bias;

 private:
  Shape shape_;
  double eps_;
};

struct Conv2dOptions {
  std::int64_t stride = 1;
  functional::Conv2dPadding padding = 0;  // zeros on each side, or "same" / "valid"
  std::int64_t dilation = 1;
  std::int64_t groups = 1;
  bool bias = true;
};

// 2-D convolution (square kernel; stride, padding, dilation and groups as Conv2dOptions);
// weight [out, in / groups, k, k] and bias drawn from U(-1/sqrt(fan_in), 1/sqrt(fan_in)),
// fan_in = in / groups * k * k, as PyTorch's default initialisation.
class Conv2d : public Module {
 public:
  Conv2d(std::int64_t in_channels, std::int64_t out_channels, std::int64_t kernel, const Conv2dOptions& options);
  Conv2d(std::int64_t in_channels, std::int64_t out_channels, std::int64_t kernel, std::int64_t stride = 1,
         std::int64_t padding = 0, bool bias = true);
  Tensor forward(const Tensor& x) override;
  Tensor weight, bias;

 private:
  Conv2dOptions options_;
};

// Square-window pooling (stride 0: the kernel size; ceil_mode as functional::max_pool2d).
class Pool2d : public Module {
 protected:
  Pool2d(std::int64_t kernel, std::int64_t stride, std::int64_t padding, bool ceil_mode)
      : Module(Library{}), kernel_(kernel), stride_(stride), padding_(padding), ceil_mode_(ceil_mode) {}
  std::int64_t kernel_, stride_, padding_;
  bool ceil_mode_;
};

class MaxPool2d : public Pool2d {
 public:
  explicit MaxPool2d(std::int64_t kernel, std::int64_t stride = 0, std::int64_t padding = 0, bool ceil_mode = false)
      : Pool2d(kernel, stride, padding, ceil_mode) {}
  Tensor forward(const Tensor& x) override;
};

class AvgPool2d : public Pool2d {
 public:
  explicit AvgPool2d(std::int64_t kernel, std::int64_t stride = 0, std::int64_t padding = 0, bool ceil_mode = false,
                     bool count_include_pad = true)
      : Pool2d(kernel, stride, padding, ceil_mode), count_include_pad_(count_include_pad) {}
  Tensor forward(const Tensor& x) override;

 private:
  bool count_include_pad_;
};

// Batch normalisation of [N, C, H, W] per channel: weight (ones) and bias (zeros) learnt,
// running_mean (zeros) and running_var (ones) tracked in training and used in eval().
class BatchNorm2d : public Module {
 public:
  explicit BatchNorm2d(std::int64_t channels, double eps = 1e-5, double momentum = 0.1);
  Tensor forward(const Tensor& x) override;
  Tensor weight, bias, running_mean, running_var;
  Tensor num_batches_tracked;  // int64, counted by each forward in training, as PyTorch's buffer

 private:
  double eps_, momentum_;
};

// Flattens dims start_dim.. (1 by default: keeps the batch).
class Flatten : public Module {
 public:
  explicit Flatten(std::int64_t start_dim = 1) : Module(Library{}), start_(start_dim) {}
  Tensor forward(const Tensor& x) override { return x.flatten(start_); }

 private:
  std::int64_t start_;
};

class Sequential : public Module {
 public:
  Sequential() : Module(Library{}) {}
  Sequential(std::initializer_list<std::shared_ptr<Module>> modules);
  Sequential& push_back(std::shared_ptr<Module> m);
  Tensor forward(const Tensor& x) override;
  std::size_t size() const { return layers_.size(); }

 private:
  std::vector<std::shared_ptr<Module>> layers_;
};

// Mean of squared differences; shapes must match exactly (unlike PyTorch, which only
// warns: a broadcast loss is the seed's section 7 bug).
// Scales every parameter's gradient so that their total norm is at most max_norm
// (PyTorch's clip_grad_norm_); returns the total norm before clipping.
double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type = 2.0);

// Parameter initialisation in place (torch.nn.init), from the seeded generator: uniform
// within the bound of Kaiming He (bound = gain * sqrt(3 / fan_in), gain = sqrt(2 / (1 + a^2)))
// or of Glorot and Bengio (bound = gain * sqrt(6 / (fan_in + fan_out))).
namespace init {
Tensor& kaiming_uniform_(Tensor& t, double a = 0);
Tensor& xavier_uniform_(Tensor& t, double gain = 1);
Tensor& zeros_(Tensor& t);
Tensor& ones_(Tensor& t);
}  // namespace init

// What the class losses take beside their inputs, as PyTorch's arguments of those names.
struct ClassLossOptions {
  Tensor weight = Tensor();          // [C], each class's weight; undefined: all 1
  std::int64_t ignore_index = -100;  // positions whose target is this count for nothing
  std::string reduction = "mean";    // "mean" (over the counted positions' weights), "sum" or "none"
  double label_smoothing = 0;        // cross-entropy: this share of the target spread over all classes
};

// The negative log-likelihood of class indices, given log-probabilities [N, C, d...] (class
// dim 1) or one row [C]; by default the mean over the positions (N x d...).
class NLLLoss {
 public:
  explicit NLLLoss(ClassLossOptions options = {}) : options_(std::move(options)) {}
  Tensor operator()(const Tensor& log_probs, const Tensor& target) const;

 private:
  ClassLossOptions options_;
};

// Binary cross-entropy of logits against targets in [0, 1] of the same shape, computed
// stably; mean over elements. pos_weight (broadcast along the last dim, PyTorch's) weighs
// the positive term: -[w y log s(x) + (1 - y) log(1 - s(x))].
class BCEWithLogitsLoss {
 public:
  explicit BCEWithLogitsLoss(Tensor pos_weight = Tensor()) : pos_weight_(std::move(pos_weight)) {}
  Tensor operator()(const Tensor& logits, const Tensor& target) const;

 private:
  Tensor pos_weight_;
};

// A module's state_dict to a file and back (torch.save / load_state_dict). load() checks
// every name, dtype and shape before it copies anything, so a wrong file leaves the module
// as it was; save() writes a new file beside the target and renames it, so a failed save
// leaves no partial file.
void save(const Module& module, const std::string& path);
void load(Module& module, const std::string& path);

class MSELoss {
 public:
  Tensor operator()(const Tensor& input, const Tensor& target) const;
};

// Mean negative log-likelihood of log_softmax(logits) over class dim 1 ([N, C, d...] or one
// row [C]) at int64 class targets, or against class probabilities of the logits' shape.
class CrossEntropyLoss {
 public:
  explicit CrossEntropyLoss(ClassLossOptions options = {}) : options_(std::move(options)) {}
  Tensor operator()(const Tensor& logits, const Tensor& target) const;

 private:
  ClassLossOptions options_;
};

}  // namespace memlens::nn
