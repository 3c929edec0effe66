// The ops, modules and training tools a transformer or a CNN needs (issue 17): values
// against closed forms, gradients against finite differences, and the memory each keeps
// for backward against what PyTorch's keeps.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memlens/runtime.hpp>

#include "gradcheck.hpp"

using namespace memlens;
namespace F = memlens::nn::functional;
using memlens::testing::gradcheck_error;
using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

namespace {
Tensor r(Shape s, double lo = -1, double hi = 1) { return rand(s, kFloat64) * (hi - lo) + lo; }
double at(const Tensor& t, std::int64_t i) { return t.reshape({-1})[i].item<double>(); }
}  // namespace

TEST_CASE("gelu, silu, erf, sin and cos: values and gradients") {
  Tensor x = tensor({-1, 0, 1}, kFloat64);
  // GELU(x) = x * Phi(x); Phi(1) = 0.841344746068543.
  CHECK(at(F::gelu(x), 0) == Approx(-0.158655253931457));
  CHECK(at(F::gelu(x), 1) == 0);
  CHECK(at(F::gelu(x), 2) == Approx(0.841344746068543));
  CHECK(at(F::silu(x), 2) == Approx(0.731058578630005));  // 1 / (1 + e^-1)
  CHECK(at(erf(tensor({0.5}, kFloat64)), 0) == Approx(0.520499877813047));
  CHECK(at(sin(tensor({std::numbers::pi / 2}, kFloat64)), 0) == Approx(1));
  CHECK(at(cos(tensor({std::numbers::pi}, kFloat64)), 0) == Approx(-1));
  manual_seed(3);
  std::vector<std::pair<const char*, Fn>> cases = {
      {"gelu", [](auto& v) { return (F::gelu(v[0]) * v[0]).sum(); }},
      {"silu", [](auto& v) { return (F::silu(v[0]) * v[0]).sum(); }},
      {"erf", [](auto& v) { return (v[0].erf() * v[0]).sum(); }},
      {"sin", [](auto& v) { return (v[0].sin() * v[0]).sum(); }},
      {"cos", [](auto& v) { return (v[0].cos() * v[0]).sum(); }},
  };
  for (auto& [name, f] : cases) {
    INFO(name);
    CHECK(gradcheck_error(f, {r({2, 5}, -3, 3)}) < 1e-6);
  }
}

TEST_CASE("softmax and log_softmax: values, gradients, and only the output kept") {
  Tensor x = tensor({1, 2, 3}, kFloat64);
  // e^k / (e + e^2 + e^3)
  CHECK(at(softmax(x, 0), 0) == Approx(0.0900305731703805));
  CHECK(at(softmax(x, 0), 2) == Approx(0.665240955774822));
  CHECK(at(log_softmax(x, 0), 2) == Approx(std::log(0.665240955774822)));
  manual_seed(4);
  Tensor w = r({3, 4});
  for (std::int64_t dim : {0, 1, -1}) {
    INFO(dim);
    CHECK(gradcheck_error([&](auto& v) { return (softmax(v[0], dim) * w).sum(); }, {r({3, 4}, -2, 2)}) < 1e-6);
    CHECK(gradcheck_error([&](auto& v) { return (log_softmax(v[0], dim) * w).sum(); }, {r({3, 4}, -2, 2)}) < 1e-6);
  }
  // PyTorch's softmax saves its result and nothing else: the shifted and exponentiated
  // intermediates are gone when it returns.
  Device sim("sim");
  Tensor s = rand({256, 256}, TensorOptions(sim).requires_grad(true));
  std::int64_t before = memory_allocated(sim);
  Tensor y = softmax(s, -1);
  CHECK(memory_allocated(sim) - before == 256 * 256 * 4);
  CHECK(y.grad_fn()->name() == "SoftmaxBackward0");
}

TEST_CASE("layer_norm: values, gradients, errors, and what it keeps") {
  Tensor x = tensor({1, 2, 3}, kFloat64);
  // mean 2, variance 2/3: (x - 2) / sqrt(2/3 + eps)
  Tensor y = F::layer_norm(x, {3});
  CHECK(at(y, 0) == Approx(-1 / std::sqrt(2.0 / 3 + 1e-5)));
  CHECK(at(y, 1) == 0);
  Tensor wb = F::layer_norm(x, {3}, tensor({2, 2, 2}, kFloat64), tensor({1, 1, 1}, kFloat64));
  CHECK(at(wb, 2) == Approx(1 + 2 / std::sqrt(2.0 / 3 + 1e-5)));
  manual_seed(5);
  Tensor mix = r({2, 3, 4});
  CHECK(gradcheck_error([&](auto& v) { return (F::layer_norm(v[0], {4}, v[1], v[2]) * mix).sum(); },
                        {r({2, 3, 4}), r({4}), r({4})}) < 1e-6);
  CHECK(gradcheck_error(
            [&](auto& v) {
              return (F::layer_norm(v[0], {3, 4}, v[1], v[2]) * mix).sum();
            },
            {r({2, 3, 4}), r({3, 4}), r({3, 4})}) < 1e-6);
  CHECK(gradcheck_error([&](auto& v) { return (F::layer_norm(v[0], {4}) * mix).sum(); }, {r({2, 3, 4})}) < 1e-6);
  CHECK_THROWS_WITH(F::layer_norm(zeros({2, 3}), {4}),
                    "Given normalized_shape=[4], expected input with shape [*, 4], but got input of size[2, 3]");
  // Kept for backward: the input (already alive), a mean and an rstd per row.
  Device sim("sim");
  nn::LayerNorm ln({512});
  ln.to(sim);
  Tensor in = rand({64, 512}, TensorOptions(sim).requires_grad(true));
  std::int64_t before = memory_allocated(sim);
  Tensor out = ln(in);
  CHECK(memory_allocated(sim) - before == 64 * 512 * 4 + 2 * 512);  // output, mean and rstd (64 floats: one 512-byte block each)
  CHECK(out.grad_fn()->name() == "NativeLayerNormBackward0");
}

TEST_CASE("dropout zeroes about p, scales the rest, keeps a one-byte mask; eval is the identity") {
  manual_seed(6);
  Tensor x = ones({100000}, TensorOptions().requires_grad(true));
  Tensor y = F::dropout(x, 0.25);
  double zeros_seen = y.eq(0).sum().item<double>() / 100000;
  CHECK(zeros_seen == Approx(0.25).margin(0.01));
  CHECK(y.max().item<double>() == Approx(1 / 0.75));
  y.sum().backward();
  CHECK(allclose(x.grad(), y.detach()));  // d(sum)/dx is the kept mask times the scale
  CHECK(F::dropout(x, 0.25, false).is_same(x));
  CHECK_THROWS_WITH(F::dropout(x, 1.5), "dropout probability has to be between 0 and 1, but got 1.500000");
  nn::Sequential net{std::make_shared<nn::Dropout>(0.5)};
  net.eval();
  CHECK(equal(net(ones({8})), ones({8})));
  net.train();
  CHECK(net.is_training());
}

TEST_CASE("embedding picks rows and accumulates their gradients") {
  Tensor w = arange(12, kFloat64).view({4, 3}).requires_grad_(true);
  Tensor idx = tensor({0, 2, 0, 3}, kInt64).view({2, 2});
  Tensor e = F::embedding(idx, w);
  CHECK(e.sizes() == Shape{2, 2, 3});
  CHECK(at(e, 3) == 6);  // row 2
  e.sum().backward();
  CHECK(equal(w.grad().sum({1}), tensor({6, 0, 3, 3}, kFloat64)));  // row 0 picked twice
  nn::Embedding table(10, 4);
  CHECK(table(tensor({1, 9}, kInt64)).sizes() == Shape{2, 4});
  CHECK_THROWS_WITH(
      F::embedding(tensor({1.0}), w),
      "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got float "
      "instead");
}

TEST_CASE("tril, triu and masked_fill") {
  Tensor a = arange(1, 10, 1, kFloat64).view({3, 3});
  CHECK(equal(tril(a), tensor({1, 0, 0, 4, 5, 0, 7, 8, 9}, {3, 3}, kFloat64)));
  CHECK(equal(triu(a, 1), tensor({0, 2, 3, 0, 0, 6, 0, 0, 0}, {3, 3}, kFloat64)));
  CHECK(equal(tril(a, -1), tensor({0, 0, 0, 4, 0, 0, 7, 8, 0}, {3, 3}, kFloat64)));
  Tensor m = tensor({1, 0, 1}, kBool);
  CHECK(equal(a.masked_fill(m, -1), tensor({-1, 2, -1, -1, 5, -1, -1, 8, -1}, {3, 3}, kFloat64)));
  CHECK_THROWS_WITH(tril(ones({3})), "tril: input tensor must have at least 2 dimensions");
  manual_seed(8);
  CHECK(gradcheck_error([&](auto& v) { return (tril(v[0]) * v[0]).sum() + v[0].masked_fill(m, 0).pow(2).sum(); },
                        {r({2, 3, 3})}) < 1e-6);
}

TEST_CASE("scaled dot-product attention: causal means over earlier positions, gradients") {
  // All queries and keys zero: every allowed position weighs the same, so causal row i is
  // the mean of v's first i + 1 rows.
  Tensor q = zeros({1, 4, 2}, kFloat64), v = arange(8, kFloat64).view({1, 4, 2});
  Tensor out = F::scaled_dot_product_attention(q, q, v, Tensor(), 0, true);
  CHECK(equal(out.select(0, 0).select(1, 0), tensor({0, 1, 2, 3}, kFloat64)));  // means of 0; 0,2; 0,2,4; ...
  Tensor everywhere = F::scaled_dot_product_attention(q, q, v);
  CHECK(allclose(everywhere.select(0, 0).select(1, 0), full({4}, 3.0, kFloat64)));
  Tensor keep_first = tensor({1, 0, 0, 0}, kBool);  // every query sees key 0 only
  CHECK(equal(F::scaled_dot_product_attention(q, q, v, keep_first).select(0, 0).select(1, 0), zeros({4}, kFloat64)));
  manual_seed(9);
  Tensor w = r({2, 3, 5, 4});
  CHECK(gradcheck_error([&](auto& x) { return (F::scaled_dot_product_attention(x[0], x[1], x[2], Tensor(), 0, true) * w).sum(); },
                        {r({2, 3, 5, 4}), r({2, 3, 5, 4}), r({2, 3, 5, 4})}) < 1e-6);
}

TEST_CASE("checkpoint: the same gradients, fewer activations kept, dropout replayed") {
  Device sim("sim");
  auto block = [](const Tensor& x) { return F::dropout((x.tanh() * 2).sigmoid().exp(), 0.3); };
  auto run = [&](bool use_checkpoint, std::int64_t* held) {
    manual_seed(10);
    Tensor x = rand({256, 256}, TensorOptions(sim).dtype(kFloat64).requires_grad(true));
    std::int64_t before = memory_allocated(sim);
    Tensor y = use_checkpoint ? checkpoint(block, x) : block(x);
    *held = memory_allocated(sim) - before;
    (y * y).sum().backward();
    return x.grad();
  };
  std::int64_t plain_held = 0, checkpointed_held = 0;
  Tensor plain = run(false, &plain_held), checkpointed = run(true, &checkpointed_held);
  CHECK(allclose(plain, checkpointed));  // the recomputation drew the same dropout mask
  // Kept: the output alone (the input is the caller's), against tanh's, sigmoid's, exp's
  // outputs and the dropout mask besides.
  const std::int64_t one = 256 * 256 * 8;
  CHECK(checkpointed_held == one);
  CHECK(plain_held == 4 * one + 256 * 256);
  // Parameters used inside get their gradients.
  nn::Linear fc(8, 8);
  Tensor in = rand({4, 8}, TensorOptions().requires_grad(true));
  checkpoint([&](const Tensor& t) { return fc(t).relu(); }, in).sum().backward();
  REQUIRE(fc.weight.grad().defined());
  Tensor want_w = fc.weight.grad().clone();
  fc.zero_grad();
  fc(in).relu().sum().backward();
  CHECK(allclose(fc.weight.grad(), want_w));
}

TEST_CASE("AdamW decays the weight itself; clip_grad_norm_ scales to the norm") {
  Tensor p = tensor({1.0}, kFloat64).requires_grad_(true);
  p.set_grad(tensor({0.5}, kFloat64));
  optim::AdamW opt({p}, {.lr = 0.1, .weight_decay = 0.01});
  opt.step();
  // p * (1 - lr * wd) - lr * m_hat / (sqrt(v_hat) + eps), m_hat = g, v_hat = g^2
  CHECK(at(p.detach(), 0) == Approx(1 * (1 - 0.001) - 0.1 * 0.5 / (0.5 + 1e-8)));
  Tensor a = zeros({2}, TensorOptions().requires_grad(true)), b = zeros({1}, TensorOptions().requires_grad(true));
  a.set_grad(tensor({3, 0})), b.set_grad(tensor({4}));
  CHECK(nn::clip_grad_norm_({a, b}, 1.0) == Approx(5));
  CHECK(at(a.grad(), 0) == Approx(0.6).epsilon(1e-5));
  CHECK(at(b.grad(), 0) == Approx(0.8).epsilon(1e-5));
  CHECK(nn::clip_grad_norm_({a, b}, 10.0) == Approx(1).epsilon(1e-5));  // under the limit: unchanged
  CHECK(at(b.grad(), 0) == Approx(0.8).epsilon(1e-5));
  // A NaN anywhere makes the norm NaN and every gradient NaN (PyTorch's clamp of NaN).
  a.set_grad(tensor({1, NAN})), b.set_grad(tensor({2}));
  CHECK(std::isnan(nn::clip_grad_norm_({a, b}, 1.0)));
  CHECK(std::isnan(at(a.grad(), 0)));
  CHECK(std::isnan(at(b.grad(), 0)));
}

namespace {
// Direct convolution from the definition, for the im2col path to be checked against.
Tensor naive_conv2d(const Tensor& x, const Tensor& w, const Tensor& b, std::int64_t stride, std::int64_t pad) {
  const std::int64_t n = x.size(0), c = x.size(1), h = x.size(2), wd = x.size(3), o = w.size(0), k = w.size(2);
  const std::int64_t oh = (h + 2 * pad - k) / stride + 1, ow = (wd + 2 * pad - k) / stride + 1;
  Tensor xc = x.contiguous(), wc = w.contiguous(), out = zeros({n, o, oh, ow}, kFloat64);
  const double *xp = xc.data_ptr<double>(), *wp = wc.data_ptr<double>(), *bp = b.data_ptr<double>();
  double* op = out.data_ptr<double>();
  for (std::int64_t in = 0; in < n; ++in)
    for (std::int64_t oc = 0; oc < o; ++oc)
      for (std::int64_t y = 0; y < oh; ++y)
        for (std::int64_t xx = 0; xx < ow; ++xx) {
          double acc = bp[oc];
          for (std::int64_t ic = 0; ic < c; ++ic)
            for (std::int64_t i = 0; i < k; ++i)
              for (std::int64_t j = 0; j < k; ++j) {
                std::int64_t iy = y * stride - pad + i, ix = xx * stride - pad + j;
                if (iy >= 0 && iy < h && ix >= 0 && ix < wd)
                  acc += xp[((in * c + ic) * h + iy) * wd + ix] * wp[((oc * c + ic) * k + i) * k + j];
              }
          op[((in * o + oc) * oh + y) * ow + xx] = acc;
        }
  return out;
}
}  // namespace

TEST_CASE("conv2d: the definition's values, gradients, errors, and only the output kept") {
  manual_seed(11);
  Tensor x = r({2, 3, 7, 6}), w = r({4, 3, 3, 3}), b = r({4});
  for (auto [stride, pad] : {std::pair{1, 0}, {2, 1}, {1, 1}}) {
    INFO(stride << " " << pad);
    Tensor got = F::conv2d(x, w, b, stride, pad);
    CHECK(got.sizes() == naive_conv2d(x, w, b, stride, pad).sizes());
    CHECK(allclose(got, naive_conv2d(x, w, b, stride, pad), 1e-9, 1e-9));
  }
  Tensor mix = r({2, 4, 4, 3});
  CHECK(gradcheck_error([&](auto& v) { return (F::conv2d(v[0], v[1], v[2], 2, 1) * mix).sum(); },
                        {r({2, 3, 7, 6}), r({4, 3, 3, 3}), r({4})}) < 1e-6);
  CHECK_THROWS_WITH(F::conv2d(zeros({2, 4, 8, 8}), zeros({8, 3, 3, 3})),
                    "Given groups=1, weight of size [8, 3, 3, 3], expected input[2, 4, 8, 8] to have 3 channels, but got 4 "
                    "channels instead");
  CHECK_THROWS_WITH(F::conv2d(zeros({2, 3}), zeros({8, 3, 3, 3})),
                    "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [2, 3]");
  // Kept for backward: the input (the caller's) and the weight; the columns are a temporary.
  Device sim("sim");
  nn::Conv2d conv(3, 16, 3, 1, 1);
  conv.to(sim);
  Tensor in = rand({8, 3, 32, 32}, TensorOptions(sim).requires_grad(true));
  std::int64_t before = memory_allocated(sim);
  Tensor out = conv(in);
  CHECK(out.sizes() == Shape{8, 16, 32, 32});
  CHECK(memory_allocated(sim) - before == 8 * 16 * 32 * 32 * 4);
  CHECK(out.grad_fn()->name() == "ConvolutionBackward0");
}

TEST_CASE("max and average pooling: values and gradients") {
  Tensor a = arange(16, kFloat64).view({1, 1, 4, 4}).requires_grad_(true);
  Tensor m = F::max_pool2d(a, 2);
  CHECK(equal(m.detach(), tensor({5, 7, 13, 15}, {1, 1, 2, 2}, kFloat64)));
  m.sum().backward();
  CHECK(equal(a.grad().reshape({-1}), tensor({0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 1, 0, 1}, kFloat64)));
  CHECK(equal(F::avg_pool2d(a.detach(), 2), tensor({2.5, 4.5, 10.5, 12.5}, {1, 1, 2, 2}, kFloat64)));
  // Padding counts as zeros in the average: the corner window holds a[0][0] = 0 and three pads.
  CHECK(at(F::avg_pool2d(a.detach(), 2, 2, 1), 1) == Approx((1 + 2 + 0 + 0) / 4.0));
  manual_seed(12);
  Tensor mix = r({2, 3, 3, 3});
  CHECK(gradcheck_error([&](auto& v) { return (F::max_pool2d(v[0], 3, 2, 1) * mix).sum(); }, {r({2, 3, 6, 5})}) < 1e-6);
  CHECK(gradcheck_error([&](auto& v) { return (F::avg_pool2d(v[0], 3, 2, 1) * mix).sum(); }, {r({2, 3, 6, 5})}) < 1e-6);
  CHECK_THROWS_WITH(F::max_pool2d(zeros({1, 1, 4, 4}), 2, 2, 2),
                    "max_pool2d: pad should be at most half of effective kernel size");
}

TEST_CASE("shapes PyTorch accepts: unbatched images, losses over positions, an unbatched NLL") {
  // One image [C, H, W], as PyTorch takes it: the result has no batch dim.
  Tensor img = arange(16, kFloat64).view({1, 4, 4});
  CHECK(equal(F::max_pool2d(img, 2), tensor({5, 7, 13, 15}, {1, 2, 2}, kFloat64)));
  CHECK(equal(F::avg_pool2d(img, 2), tensor({2.5, 4.5, 10.5, 12.5}, {1, 2, 2}, kFloat64)));
  manual_seed(16);
  Tensor x = r({3, 5, 4}), w = r({2, 3, 3, 3}), b = r({2});
  Tensor got = F::conv2d(x, w, b, 1, 1);
  CHECK(got.sizes() == Shape{2, 5, 4});
  CHECK(allclose(got, naive_conv2d(x.unsqueeze(0), w, b, 1, 1)[0], 1e-9, 1e-9));
  CHECK(gradcheck_error([&](auto& v) { return F::conv2d(v[0], v[1], v[2], 1, 1).pow(2).sum(); }, {r({3, 5, 4}), w, b}) < 1e-6);
  // Cross-entropy over [N, C, d]: class dim 1, averaged over the N x d positions. By hand,
  // positions (0, 0) -> class 0: ln 2; (ln 3, 0) -> class 0: ln(4/3).
  Tensor logits = tensor({0, std::log(3.0), 0, 0}, {1, 2, 2}, kFloat64);
  CHECK(nn::CrossEntropyLoss()(logits, zeros({1, 2}, kInt64)).item<double>() == Approx((std::log(2.0) + std::log(4.0 / 3)) / 2));
  Tensor seg = r({2, 4, 3, 5}).requires_grad_(true), labels = randint(0, 4, {2, 3, 5});
  CHECK(nn::CrossEntropyLoss()(seg, labels).item<double>() ==
        Approx(nn::CrossEntropyLoss()(seg.permute({0, 2, 3, 1}).reshape({-1, 4}), labels.reshape({-1})).item<double>()));
  CHECK(gradcheck_error([&](auto& v) { return nn::CrossEntropyLoss()(v[0], labels); }, {r({2, 4, 3, 5})}) < 1e-6);
  CHECK_THROWS_WITH(nn::CrossEntropyLoss()(seg, zeros({2, 3}, kInt64)),
                    "CrossEntropyLoss: expected target of shape [2, 3, 5], got [2, 3]");
  // An unbatched NLL: one row of log-probabilities and a 0-dim target.
  CHECK(nn::NLLLoss()(log_softmax(zeros({3}, kFloat64), 0), scalar_tensor(1, kInt64)).item<double>() == Approx(std::log(3.0)));
}

TEST_CASE("batch_norm: per-channel statistics, running averages, eval, gradients") {
  manual_seed(13);
  Tensor x = r({4, 2, 3, 3}, -2, 5);
  Tensor rm = zeros({2}, kFloat64), rv = ones({2}, kFloat64);
  Tensor y = F::batch_norm(x, rm, rv, Tensor(), Tensor(), true, 0.1);
  // Each channel's 36 values, read out one by one for the statistics.
  for (std::int64_t ch = 0; ch < 2; ++ch) {
    std::vector<double> v;
    Tensor plane = x.select(1, ch).contiguous();
    for (std::int64_t i = 0; i < 36; ++i) v.push_back(plane.data_ptr<double>()[i]);
    double mean = 0, sq = 0;
    for (double e : v) mean += e / 36;
    for (double e : v) sq += (e - mean) * (e - mean);
    CHECK(at(rm, ch) == Approx(0.1 * mean));
    CHECK(at(rv, ch) == Approx(0.9 + 0.1 * sq / 35));  // unbiased
    CHECK(y.select(1, ch).mean().item<double>() == Approx(0).margin(1e-12));
    CHECK(at(y.select(1, ch).contiguous(), 0) == Approx((v[0] - mean) / std::sqrt(sq / 36 + 1e-5)));
  }
  // Evaluation uses the running statistics.
  Tensor e = F::batch_norm(x, rm, rv, Tensor(), Tensor(), false);
  CHECK(at(e, 0) == Approx((at(x, 0) - at(rm, 0)) / std::sqrt(at(rv, 0) + 1e-5)));
  Tensor mix = r({4, 2, 3, 3});
  CHECK(gradcheck_error([&](auto& v) { return (F::batch_norm(v[0], Tensor(), Tensor(), v[1], v[2]) * mix).sum(); },
                        {r({4, 2, 3, 3}), r({2}), r({2})}) < 1e-6);
  CHECK(gradcheck_error([&](auto& v) { return (F::batch_norm(v[0], rm, rv, v[1], v[2], false) * mix).sum(); },
                        {r({4, 2, 3, 3}), r({2}), r({2})}) < 1e-6);
  CHECK_THROWS_WITH(F::batch_norm(zeros({1, 2}), Tensor(), Tensor()),
                    "Expected more than 1 value per channel when training, got input size [1, 2]");
  // The module moves its running statistics with it, and eval() switches to them.
  Device sim("sim");
  nn::BatchNorm2d bn(2);
  bn.to(sim);
  CHECK(bn.running_mean.device() == sim);
  bn(x.to(kFloat32).to(sim));
  CHECK(bn.running_mean.sum().item<double>() != 0);
  bn.eval();
  CHECK_FALSE(bn.is_training());
}

TEST_CASE("initialisation bounds; NLLLoss and BCEWithLogitsLoss values") {
  manual_seed(14);
  Tensor w = empty({64, 100});
  nn::init::kaiming_uniform_(w);
  const double kaiming = std::sqrt(2.0) * std::sqrt(3.0 / 100);
  CHECK(w.abs().max().item<double>() <= kaiming);
  CHECK(w.abs().max().item<double>() > 0.9 * kaiming);
  Tensor c = empty({8, 4, 3, 3});  // fan_in 36, fan_out 72
  nn::init::xavier_uniform_(c);
  CHECK(c.abs().max().item<double>() <= std::sqrt(6.0 / 108));
  Tensor vector = zeros({3});
  CHECK_THROWS_WITH(nn::init::kaiming_uniform_(vector),
                    "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions");
  Tensor lp = log_softmax(tensor({1, 2, 3, 1, 1, 1}, {2, 3}, kFloat64), 1);
  CHECK(nn::NLLLoss()(lp, tensor({2, 0}, kInt64)).item<double>() ==
        Approx(-(std::log(std::exp(3.0) / (std::exp(1.0) + std::exp(2.0) + std::exp(3.0))) + std::log(1.0 / 3)) / 2));
  // BCE of logit 0 is log 2 whatever the target; a large logit does not overflow.
  CHECK(nn::BCEWithLogitsLoss()(zeros({4}), tensor({0, 1, 0.5, 1})).item<double>() == Approx(std::log(2.0)));
  CHECK(nn::BCEWithLogitsLoss()(tensor({1000}), tensor({1})).item<double>() == Approx(0).margin(1e-6));
  CHECK(gradcheck_error([](auto& v) { return nn::BCEWithLogitsLoss()(v[0], v[1].sigmoid()); }, {r({5}), r({5})}) < 1e-6);
  // At logit 0 the gradient is (sigmoid(0) - y) / N, the loss's own, not a kink's one side.
  Tensor x = zeros({2}, TensorOptions(kFloat64).requires_grad(true));
  nn::BCEWithLogitsLoss()(x, tensor({1, 0}, kFloat64)).backward();
  CHECK(equal(x.grad(), tensor({-0.25, 0.25}, kFloat64)));
  CHECK(x.grad_fn() == nullptr);
}

TEST_CASE("loss options as PyTorch's: class weights, ignore_index, reductions, label smoothing, pos_weight") {
  // Expected values computed by PyTorch (torch.nn.functional, float64) for these inputs.
  Tensor x = tensor({2, 0, 0, 0, 3, 0, 1, 1, 1, 0, 0, 0.5}, {4, 3}, kFloat64), t = tensor({0, 1, 2, 1}, kInt64);
  Tensor w = tensor({1, 2, 0.5}, kFloat64);
  auto ce = [&](nn::ClassLossOptions o) { return nn::CrossEntropyLoss(std::move(o))(x, t); };
  CHECK(ce({.weight = w}).item<double>() == Approx(0.6486273385878449));
  CHECK(ce({.ignore_index = 1}).item<double>() == Approx(0.6690785274449973));
  CHECK(ce({.reduction = "sum"}).item<double>() == Approx(2.7274567807285983));
  CHECK(allclose(ce({.reduction = "none"}), tensor({0.23954477, 0.09492296, 1.09861229, 1.29437677}, kFloat64), 1e-7, 1e-7));
  CHECK(ce({.label_smoothing = 0.1}).item<double>() == Approx(0.7610308618488163));
  CHECK(ce({.weight = w, .label_smoothing = 0.2}).item<double>() == Approx(0.7467333706587619));
  CHECK(ce({.weight = w, .ignore_index = 2}).item<double>() == Approx(0.6036288435798184));
  CHECK(ce({.ignore_index = 1, .label_smoothing = 0.2}).item<double>() == Approx(0.8024118607783306));
  CHECK(nn::NLLLoss({.ignore_index = 0})(log_softmax(x, 1), t).item<double>() == Approx(0.8293040048355712));
  Tensor xg = x.detach().requires_grad_(true);
  nn::CrossEntropyLoss({.weight = w, .label_smoothing = 0.2})(xg, t).backward();
  CHECK(allclose(xg.grad(),
                 tensor({-0.009717773896911818, -0.004232022142453192, 0.01394979603936499, 0.002971621459997574,
                         -0.012003848980601143, 0.009032227520603635, 0.026262626262626262, 0.01414141414141414,
                         -0.040404040404040414, 0.07923499423252023, -0.22379530879778284, 0.14456031456526264},
                        {4, 3}, kFloat64),
                 1e-9, 1e-9));
  Tensor p = tensor({0.5, 0.5, 0, 0, 1, 0}, {2, 3}, kFloat64), x2 = x.narrow(0, 0, 2);
  CHECK(nn::CrossEntropyLoss({.label_smoothing = 0.3})(x2, p).item<double>() == Approx(1.0172338613214225));
  CHECK(nn::CrossEntropyLoss({.weight = w, .reduction = "sum"})(x2, p).item<double>() == Approx(2.549163062174748));
  CHECK_THROWS_AS(ce({.reduction = "average"}), ValueError);
  CHECK_THROWS_WITH(ce({.weight = tensor({1, 2}, kFloat64)}),
                    "CrossEntropyLoss: weight tensor should be defined either for all 3 classes or no classes but got weight "
                    "tensor of shape: [2]");
  // pos_weight weighs the positive term, broadcast along the last dim.
  Tensor z = tensor({0.5, -1, 2, 0}, {2, 2}, kFloat64).requires_grad_(true);
  Tensor y = tensor({1, 0, 0, 1}, {2, 2}, kFloat64).requires_grad_(true);
  Tensor l = nn::BCEWithLogitsLoss(tensor({3, 0.5}, kFloat64))(z, y);
  CHECK(l.item<double>() == Approx(1.052248560345372));
  l.backward();
  CHECK(allclose(z.grad(), tensor({-0.283155501598609, 0.06723535534249878, 0.22019926949447058, -0.0625}, {2, 2}, kFloat64),
                 1e-9, 1e-9));
  CHECK(allclose(y.grad(),
                 tensor({0.11203849209005334, 0.08584228906022214, -0.43653599447851377, -0.08664339756999316}, {2, 2}, kFloat64),
                 1e-9, 1e-9));
}

TEST_CASE("gelu's tanh form, split by sizes, scatter_add, as PyTorch's") {
  // gelu(1, 'tanh') = 0.5 (1 + tanh(sqrt(2/pi) 1.044715)), worked by hand.
  const double k = std::sqrt(2 / M_PI), u = k * (1 + 0.044715);
  CHECK(F::gelu(tensor({1.0}, kFloat64), "tanh").item<double>() == Approx(0.5 * (1 + std::tanh(u))));
  CHECK(gradcheck_error([](auto& v) { return F::gelu(v[0], "tanh").sum(); }, {r({6})}) < 1e-6);
  CHECK_THROWS_WITH(F::gelu(zeros({2}), "fast"), "approximate argument must be either none or tanh.");
  Tensor a = arange(10, kFloat64).view({5, 2});
  auto parts = a.split(Shape{2, 3});
  REQUIRE(parts.size() == 2);
  CHECK(equal(parts[1], tensor({4, 5, 6, 7, 8, 9}, {3, 2}, kFloat64)));
  CHECK(parts[1].storage_offset() == 4);  // a view
  CHECK_THROWS_WITH(a.split(Shape{2, 2}),
                    "split_with_sizes expects split_sizes to sum exactly to 5 (input tensor's size at "
                    "dimension 0), but got split_sizes=[2, 2]");
  // Repeated indices add: row 0 gets 1 + 3, row 2 gets 2.
  Tensor s = zeros({3}, kFloat64).scatter_add(0, tensor({0, 2, 0}, kInt64), tensor({1, 2, 3}, kFloat64));
  CHECK(equal(s, tensor({4, 0, 2}, kFloat64)));
  CHECK(gradcheck_error(
            [](auto& v) {
              return (v[0].scatter_add(1, tensor({0, 0, 1, 1, 0, 1}, {2, 3}, kInt64), v[1]) * v[0]).sum();
            },
            {r({2, 2}), r({2, 3})}) < 1e-6);
}

TEST_CASE("options people use keep PyTorch's defaults and rules") {
  SECTION("AdamW given only a learning rate still decays by 0.01; Adam does not") {
    Tensor p = tensor({1.0}, kFloat64).requires_grad_(true), q = tensor({1.0}, kFloat64).requires_grad_(true);
    p.set_grad(tensor({0.5}, kFloat64)), q.set_grad(tensor({0.5}, kFloat64));
    optim::AdamW({p}, {.lr = 0.1}).step();
    optim::Adam({q}, {.lr = 0.1}).step();
    CHECK(at(p.detach(), 0) == Approx(1 * (1 - 0.1 * 0.01) - 0.1 * 0.5 / (0.5 + 1e-8)));
    CHECK(at(q.detach(), 0) == Approx(1 - 0.1 * 0.5 / (0.5 + 1e-8)));
  }
  SECTION("BatchNorm counts its training batches in a buffer, not in eval") {
    nn::BatchNorm2d bn(2);
    Tensor x = rand({4, 2, 3, 3});
    bn.forward(x), bn.forward(x);
    bn.eval();
    bn.forward(x);
    CHECK(bn.num_batches_tracked.dtype() == kInt64);
    CHECK(bn.num_batches_tracked.item<std::int64_t>() == 2);
    CHECK_THROWS_AS(bn.forward(rand({2, 3, 3})), ValueError);  // PyTorch's _check_input_dim
    bn.train();
    CHECK_THROWS_AS(bn.forward(rand({1, 2, 1, 1})), ValueError);  // one value per channel
  }
  SECTION("state_dict entries are detached: a computation from them records no graph") {
    nn::Linear fc(3, 2);
    auto state = fc.state_dict();
    CHECK_FALSE(state[0].second.requires_grad());
    CHECK((state[0].second * 2).grad_fn() == nullptr);
    state[1].second.fill_(5);  // yet the storage is the module's
    CHECK(equal(fc.bias.detach(), full({2}, 5.0)));
  }
  SECTION("int32 indices select as int64 ones do") {
    Tensor w = arange(12, kFloat32).view({4, 3});
    CHECK(equal(w.index_select(0, tensor({3, 1}, kInt32)), w.index_select(0, tensor({3, 1}, kInt64))));
    CHECK(
        equal(F::embedding(tensor({2, 0, 2}, kInt32).view({3, 1}), w), F::embedding(tensor({2, 0, 2}, kInt64).view({3, 1}), w)));
    CHECK_THROWS_AS(w.index_select(0, tensor({1.0})), TypeError);
  }
  SECTION("softmax of integers is an error, as in PyTorch") {
    CHECK_THROWS_WITH(softmax(tensor({1, 2}, kInt64), 0),
                      "softmax(): not implemented for torch.int64: give it a floating point tensor");
    CHECK_THROWS_AS(log_softmax(tensor({1, 2}, kInt64), 0), Error);
  }
  SECTION("a loss's target of another shape is a ValueError, as PyTorch's") {
    CHECK_THROWS_AS(nn::BCEWithLogitsLoss()(zeros({3}), zeros({3, 1})), ValueError);
  }
}

TEST_CASE("learning-rate schedules") {
  Tensor p = zeros({1}, TensorOptions().requires_grad(true));
  optim::SGD sgd({p}, 0.1);
  optim::StepLR step(sgd, 2, 0.5);
  std::vector<double> rates;
  for (int i = 0; i < 5; ++i) step.step(), rates.push_back(sgd.lr());
  CHECK(rates == std::vector<double>{0.1, 0.05, 0.05, 0.025, 0.025});
  optim::Adam adam({p}, {.lr = 1.0});
  optim::CosineAnnealingLR cosine(adam, 4, 0.0);
  cosine.step();
  CHECK(adam.lr() == Approx((1 + std::cos(std::numbers::pi / 4)) / 2));
  cosine.step(), cosine.step(), cosine.step();
  CHECK(cosine.last_lr() == Approx(0).margin(1e-12));
  CHECK_THROWS_WITH(optim::StepLR(sgd, 0), "StepLR: step_size must be positive, got 0");
}

TEST_CASE("state_dict, save and load: round trip, buffers, refusals that change nothing") {
  auto path = (std::filesystem::temp_directory_path() / ("memlens-state-" + std::to_string(::getpid()))).string();
  manual_seed(15);
  nn::Sequential a{std::make_shared<nn::Linear>(4, 3), std::make_shared<nn::BatchNorm2d>(3)};
  auto names = a.state_dict();
  REQUIRE(names.size() == 7);  // weight, bias, bn weight, bn bias, running_mean, running_var, num_batches_tracked
  CHECK(names[4].first == "1.running_mean");
  CHECK(names[6].first == "1.num_batches_tracked");
  names[4].second.fill_(7);  // a buffer's value travels too
  nn::save(a, path);
  nn::Sequential b{std::make_shared<nn::Linear>(4, 3), std::make_shared<nn::BatchNorm2d>(3)};
  nn::load(b, path);
  for (std::size_t i = 0; i < names.size(); ++i) CHECK(equal(b.state_dict()[i].second, names[i].second));
  CHECK(b.parameters()[0].requires_grad());               // still a parameter,
  CHECK_FALSE(b.state_dict()[0].second.requires_grad());  // its entry detached, as PyTorch's
  nn::Sequential wrong{std::make_shared<nn::Linear>(4, 5), std::make_shared<nn::BatchNorm2d>(5)};
  Tensor before = wrong.state_dict()[0].second.clone();
  CHECK_THROWS_WITH(nn::load(wrong, path), path +
                                               ": size mismatch for 0.weight: copying a param with shape [3, 4] from "
                                               "checkpoint, the shape in current model is [5, 4].");
  CHECK(equal(wrong.state_dict()[0].second, before));  // nothing copied
  // A damaged file is refused with one line, and the model is untouched.
  std::string bytes;
  {
    std::ifstream f(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size() / 2));
  CHECK_THROWS_WITH(nn::load(b, path), path + ": not a memlens state file (truncated)");
  std::ofstream(path, std::ios::binary | std::ios::trunc) << "PK\\x03\\x04 a zip";
  CHECK_THROWS_WITH(nn::load(b, path), path + ": not a memlens state file (bad magic)");
  CHECK_THROWS_WITH(nn::load(b, path + ".none"), path + ".none: cannot open the state file");
  CHECK_THROWS_WITH(nn::save(a, "/proc/no/such/dir/state"), "/proc/no/such/dir/state: cannot write the state file");
  std::filesystem::remove(path);
}

// torch.nn.MultiheadAttention(4, 2, batch_first=True) with the same weights and input
// gives these (PyTorch 1.13, python3-torch, CPU), typed in.
TEST_CASE("MultiheadAttention: PyTorch's outputs, weights, masks and gradients") {
  nn::MultiheadAttention m(4, 2, 0, true, true);
  CHECK(m.parameters().size() == 4);  // in_proj_weight, in_proj_bias, out_proj.weight, out_proj.bias
  {
    NoGradGuard g;
    m.in_proj_weight.copy_((arange(48) * 0.37).sin().view({12, 4}) * 0.5);
    m.in_proj_bias.copy_(arange(12).to(kFloat32).cos() * 0.1);
    m.out_proj->weight.copy_((arange(16) * 0.7 + 1).sin().view({4, 4}) * 0.4);
    m.out_proj->bias.copy_(arange(4) * 0.05);
  }
  Tensor x = (arange(24) * 0.3).sin().view({2, 3, 4});
  auto [out, w] = m.attention(x, x, x);
  CHECK(out.sizes() == Shape{2, 3, 4});
  CHECK(w.sizes() == Shape{2, 3, 3});
  CHECK(allclose(out.reshape({-1}).narrow(0, 0, 4), tensor({0.40557334, -0.25473440, 0.26868156, 0.13686326}), 1e-4, 1e-5));
  CHECK(allclose(out.reshape({-1}).narrow(0, 20, 4), tensor({-0.32161725, 0.34601679, -0.13620988, 0.29910773}), 1e-4, 1e-5));
  CHECK(allclose(w.reshape({-1}).narrow(0, 0, 6),
                 tensor({0.30991554, 0.46994069, 0.22014377, 0.22151846, 0.65621734, 0.12226415}), 1e-4, 1e-5));
  // A bool mask is true where a query may not attend (PyTorch's convention for this module).
  Tensor mask = tensor({0, 1, 1, 0, 0, 1, 0, 0, 0}, kBool).view({3, 3});
  auto [masked, mw] = m.attention(x, x, x, mask);
  CHECK(allclose(mw.select(0, 0).reshape({-1}), tensor({1, 0, 0, 0.25237650, 0.74762350, 0, 0.29345354, 0.45122549, 0.25532103}),
                 1e-4, 1e-5));
  CHECK(allclose(masked.reshape({-1}).narrow(0, 0, 4), tensor({0.28180477, -0.11297549, 0.12531337, 0.26527378}), 1e-4, 1e-5));
  // Without weights it runs scaled_dot_product_attention: the same output, no weights.
  auto [fast, none] = m.attention(x, x, x, mask, false);
  CHECK_FALSE(none.defined());
  CHECK(allclose(fast, masked, 1e-5, 1e-6));
  auto [causal, cw] = m.attention(x, x, x, Tensor(), true, true);
  CHECK(allclose(causal, masked, 1e-5, 1e-6));  // that mask is the causal one
  out.sum().backward();
  CHECK(std::abs(m.in_proj_weight.grad().sum().item<double>() - -0.20681423) < 1e-5);
  CHECK(allclose(m.in_proj_weight.grad()[0], tensor({-0.00606396, -0.00184669, 0.00253554, 0.00669127}), 1e-3, 1e-6));
  // Sequence-first by default; forward(x) is self-attention.
  nn::MultiheadAttention seq_first(4, 2);
  CHECK(seq_first(x.transpose(0, 1)).sizes() == Shape{3, 2, 4});
  CHECK_THROWS_WITH(nn::MultiheadAttention(6, 4), "embed_dim must be divisible by num_heads (embed_dim 6, num_heads 4)");
  CHECK_THROWS_WITH(m.attention(x, x, x.narrow(2, 0, 3)),
                    "MultiheadAttention: expected inputs of shape [B, T, 4], got [2, 3, 3]");
}
