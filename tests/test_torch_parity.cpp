// PyTorch's options and precision rules (issue 39): conv2d's dilation, groups and
// padding modes, pooling's ceil_mode and count_include_pad, embedding's padding_idx, norm
// over dims. Expected numbers are PyTorch's (torch.nn.functional in float64) for the same
// inputs, reduced to digests: sum(out * M) for the output and sum(grad * M) for each
// input's gradient of sum(out * M), M a fixed pattern; gradients are also checked by
// finite differences.
#include <catch2/catch.hpp>
#include <memlens/runtime.hpp>

#include "gradcheck.hpp"

using namespace memlens;
namespace F = memlens::nn::functional;
using memlens::testing::gradcheck_error;

namespace {

// ((k * a) mod m - off) / div for k = 0.. in row-major order: exact in float64, as the
// Python side builds it.
Tensor pattern(const Shape& shape, std::int64_t a, std::int64_t m, double off, double div) {
  std::size_t n = 1;
  for (auto d : shape) n *= static_cast<std::size_t>(d);
  std::vector<double> v(n);
  for (std::size_t k = 0; k < v.size(); ++k) v[k] = (static_cast<double>(static_cast<std::int64_t>(k) * a % m) - off) / div;
  return tensor(v, shape, kFloat64);
}
Tensor mix(const Shape& shape) { return pattern(shape, 1, 13, 6, 7); }
double digest(const Tensor& t) { return (t * mix(t.sizes())).sum().item<double>(); }

struct Expected {
  Shape shape;
  double out;
  std::vector<double> grads;
};

// f's output and its inputs' gradients against PyTorch's digests.
void check_against_torch(const std::function<Tensor(const std::vector<Tensor>&)>& f, std::vector<Tensor> inputs,
                         const Expected& want) {
  for (auto& t : inputs) t = t.detach().requires_grad_(true);
  Tensor out = f(inputs);
  CHECK(out.sizes() == want.shape);
  CHECK(digest(out.detach()) == Approx(want.out).margin(1e-12));
  (out * mix(out.sizes())).sum().backward();
  for (std::size_t i = 0; i < want.grads.size(); ++i) {
    INFO("input " << i);
    CHECK(digest(inputs[i].grad()) == Approx(want.grads[i]).margin(1e-12));
  }
}

}  // namespace

TEST_CASE("conv2d: dilation, groups and padding modes as PyTorch's") {
  Tensor x = pattern({2, 4, 5, 5}, 7, 11, 5, 4), w = pattern({6, 2, 2, 3}, 5, 9, 4, 8), b = pattern({6}, 3, 7, 3, 2);
  // A 2x3 kernel over half the channels per group, taps 2 apart: 'same' pads 1 before and
  // 1 after in height, 2 and 2 in width.
  check_against_torch([](auto& v) { return F::conv2d(v[0], v[1], v[2], 1, "same", 2, 2); }, {x, w, b},
                      {{2, 6, 5, 5}, 5.013392857142857, {2.0051020408163254, -6.795918367346935, 1.1428571428571432}});
  check_against_torch([](auto& v) { return F::conv2d(v[0], v[1], v[2], 2, 1, 2, 2); }, {x, w, b},
                      {{2, 6, 3, 2}, 10.584821428571429, {-0.6734693877551019, -3.321428571428571, 1.8775510204081627}});
  // An even kernel: 'same' pads 0 before and 1 after, as PyTorch.
  Tensor w1 = pattern({3, 4, 2, 2}, 5, 9, 4, 8);
  check_against_torch([](auto& v) { return F::conv2d(v[0], v[1], Tensor(), 1, "same"); }, {x, w1},
                      {{2, 3, 5, 5}, -1.678571428571428, {-2.8341836734693873, 1.0204081632653048}});
  check_against_torch([](auto& v) { return F::conv2d(v[0], v[1], Tensor(), 1, "valid"); }, {x, w1},
                      {{2, 3, 4, 4}, 0.43303571428571397, {4.153061224489796, -0.68877551020408}});
  // Depthwise: a filter per channel.
  check_against_torch([](auto& v) { return F::conv2d(v[0], v[1], Tensor(), 1, 1, 1, 4); }, {x, pattern({4, 1, 3, 3}, 5, 9, 4, 8)},
                      {{2, 4, 5, 5}, -0.24553571428571397, {4.566326530612244, 2.4693877551020393}});
  manual_seed(5);
  Tensor m = rand({1, 4, 3, 4}, kFloat64);
  CHECK(gradcheck_error([&](auto& v) { return (F::conv2d(v[0], v[1], v[2], 1, "same", 2, 2) * m).sum(); },
                        {rand({1, 4, 3, 4}, kFloat64), rand({4, 2, 2, 3}, kFloat64), rand({4}, kFloat64)}) < 1e-6);
  CHECK_THROWS_WITH(F::conv2d(zeros({1, 6, 4, 4}), zeros({4, 2, 3, 3}), Tensor(), 2, "same"),
                    "padding='same' is not supported for strided convolutions");
  CHECK_THROWS_WITH(F::conv2d(zeros({1, 6, 4, 4}), zeros({4, 2, 3, 3}), Tensor(), 1, F::Conv2dPadding("full")),
                    "Invalid padding string: 'full'");
  CHECK_THROWS_WITH(F::conv2d(zeros({1, 6, 4, 4}), zeros({4, 2, 3, 3}), Tensor(), 1, 0, 1, 3),
                    "Given groups=3, expected weight to be divisible by 3 at dimension 0, but got weight of size [4, 2, 3, 3] "
                    "instead");
  CHECK_THROWS_WITH(F::conv2d(zeros({1, 6, 4, 4}), zeros({4, 2, 3, 3}), Tensor(), 1, 0, 1, 2),
                    "Given groups=2, weight of size [4, 2, 3, 3], expected input[1, 6, 4, 4] to have 4 channels, but got 6 "
                    "channels instead");
  // The module: weight [out, in / groups, k, k], output as large as the input.
  nn::Conv2d conv(4, 8, 3, nn::Conv2dOptions{.padding = "same", .dilation = 2, .groups = 2});
  CHECK(conv.weight.sizes() == Shape{8, 2, 3, 3});
  CHECK(conv(zeros({1, 4, 7, 7})).sizes() == Shape{1, 8, 7, 7});
  CHECK_THROWS_AS(nn::Conv2d(4, 6, 3, nn::Conv2dOptions{.groups = 4}), ShapeError);
}

TEST_CASE("pooling: ceil_mode and count_include_pad as PyTorch's") {
  Tensor p = pattern({1, 2, 5, 5}, 7, 11, 5, 4);
  check_against_torch([](auto& v) { return F::max_pool2d(v[0], 2, 2, 0, true); }, {p},
                      {{1, 2, 3, 3}, -2.25, {2.204081632653061}});
  check_against_torch([](auto& v) { return F::max_pool2d(v[0], 3, 2, 1, true); }, {p},
                      {{1, 2, 3, 3}, -2.857142857142857, {0.7755102040816327}});
  // A last window hanging past the input counts only what lies inside the padded input.
  check_against_torch([](auto& v) { return F::avg_pool2d(v[0], 2, 2, 0, true); }, {p},
                      {{1, 2, 3, 3}, -0.14285714285714274, {0.25}});
  check_against_torch([](auto& v) { return F::avg_pool2d(v[0], 3, 2, 1, true); }, {p},
                      {{1, 2, 3, 3}, 0.2738095238095238, {0.03174603174603176}});
  check_against_torch([](auto& v) { return F::avg_pool2d(v[0], 3, 2, 1, false, false); }, {p},
                      {{1, 2, 3, 3}, 0.47817460317460314, {0.23412698412698413}});
  check_against_torch([](auto& v) { return nn::AvgPool2d(3, 2, 1, true, false)(v[0]); }, {p},
                      {{1, 2, 3, 3}, 0.47817460317460314, {0.23412698412698413}});
  // A window that would start in the trailing padding is dropped.
  Tensor q = zeros({1, 1, 6, 6});
  CHECK(F::max_pool2d(q, 3, 2, 0, true).sizes() == Shape{1, 1, 3, 3});
  CHECK(nn::MaxPool2d(3, 2, 1, true)(q).sizes() == Shape{1, 1, 4, 4});
  // By hand: the corner window of avg_pool2d(k 2, stride 2, pad 1) over arange(16) holds
  // a[0][0] = 0 alone without the padding counted, a[0][1] + a[0][2] = 3 over 2 next to it.
  Tensor a = arange(16, kFloat64).view({1, 1, 4, 4});
  Tensor avg = F::avg_pool2d(a, 2, 2, 1, false, false).reshape({-1});
  CHECK(avg[0].item<double>() == 0);
  CHECK(avg[1].item<double>() == 1.5);
  manual_seed(6);
  Tensor m = rand({2, 3, 4, 3}, kFloat64);
  CHECK(gradcheck_error([&](auto& v) { return (F::avg_pool2d(v[0], 3, 2, 1, true, false) * m).sum(); },
                        {rand({2, 3, 6, 5}, kFloat64)}) < 1e-6);
  CHECK(gradcheck_error([&](auto& v) { return (F::max_pool2d(v[0], 3, 2, 1, true) * m).sum(); }, {rand({2, 3, 6, 5}, kFloat64)}) <
        1e-6);
}

TEST_CASE("embedding: the padding_idx row starts at zero and gets no gradient") {
  Tensor e = pattern({5, 3}, 5, 9, 4, 8).requires_grad_(true);
  Tensor idx = tensor({1, 0, 3, 3, 4, 1}, {2, 3}, kInt64);
  Tensor out = F::embedding(idx, e, 3);
  CHECK(out.grad_fn()->name() == "EmbeddingBackward0");
  (out * mix(out.sizes())).sum().backward();
  const double c = 1.0 / 7;  // PyTorch's gradient, row 3 zero
  CHECK(allclose(e.grad(),
                 tensor({-3 * c, -2 * c, -c, -10 * c, -8 * c, -6 * c, 0, 0, 0, 0, 0, 0, 6 * c, -6 * c, -5 * c}, {5, 3}, kFloat64),
                 1e-12, 1e-12));
  e.grad().zero_();
  F::embedding(idx.to(kInt32), e, -1).mul(mix({2, 3, 3})).sum().backward();  // row 4, counted from the end
  CHECK(allclose(e.grad().select(0, 3), tensor({3 * c, 5 * c, 7 * c}, kFloat64), 1e-12, 1e-12));
  CHECK(allclose(e.grad().select(0, 4), zeros({3}, kFloat64)));
  nn::Embedding table(5, 3, 2);
  CHECK(equal(table.weight.select(0, 2), zeros({3})));
  CHECK_THROWS_WITH(nn::Embedding(5, 3, 5), "Padding_idx must be within num_embeddings");
}

TEST_CASE("norm over dims: values and gradients as PyTorch's, ties shared evenly") {
  Tensor n = pattern({3, 4, 2}, 7, 11, 5, 4);
  struct Case {
    double p;
    Shape dims;
    bool keepdim;
    Expected want;
  };
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<Case> cases = {
      {2, {1}, false, {{3, 2}, -4.877785836435534, {0.11893784690498471}}},
      {2, {0, 2}, true, {{1, 4, 1}, -5.0680133992078975, {-0.006653084341231685}}},
      {2, {-1}, false, {{3, 4}, -1.153963887243108, {-0.45476409349482083}}},
      {1, {1}, false, {{3, 2}, -8.428571428571429, {0.10204081632653073}}},
      {1, {0, 2}, true, {{1, 4, 1}, -11.071428571428571, {0.12244897959183676}}},
      {3, {1}, false, {{3, 2}, -4.220568814259724, {0.26113157346144567}}},
      {3, {0, 2}, true, {{1, 4, 1}, -4.0126756988164995, {0.042173581051171694}}},
      // inf: the largest |x|; slice [2, :, 1] has a tie (1.25 twice), its gradient halved.
      {inf, {1}, false, {{3, 2}, -3.7142857142857144, {0.4285714285714287}}},
      {inf, {0, 2}, true, {{1, 4, 1}, -2.9285714285714284, {-0.16326530612244894}}},
      {-inf, {1}, false, {{3, 2}, -0.5, {0.8571428571428571}}},
      {0, {-1}, false, {{3, 4}, -1.7142857142857142, {}}},
  };
  for (const auto& k : cases) {
    INFO("p " << k.p << " dims " << shape_str(k.dims) << " keepdim " << k.keepdim);
    check_against_torch([&](auto& v) { return v[0].norm(k.p, k.dims, k.keepdim); }, {n}, k.want);
  }
  // By hand: two elements tie for the largest |x| and share the gradient, sign kept.
  Tensor t = tensor({3, -3, 1, 2, 0, -1}, {2, 3}, kFloat64).requires_grad_(true);
  t.norm(inf, {1}).sum().backward();
  CHECK(equal(t.grad(), tensor({0.5, -0.5, 0, 1, 0, 0}, {2, 3}, kFloat64)));
  manual_seed(7);
  CHECK(gradcheck_error(
            [](auto& v) {
              return (v[0].norm(3, {0}) * tensor({1, -2, 3}, kFloat64)).sum();
            },
            {rand({4, 3}, kFloat64) + 0.1}) < 1e-6);
  CHECK(n.norm().item<double>() == Approx(n.norm(2, {0, 1, 2}).item<double>()));
}

TEST_CASE("16-bit floats round once, at each op's output, as PyTorch's kernels") {
  // Inputs: non-dyadic values rounded to bfloat16. The reference: the same op in float64
  // on the same 16-bit values, rounded to bfloat16 once (PyTorch 1.13's CPU kernels give
  // exactly that for softmax, linear, conv2d, addmm and add_ on these inputs).
  auto bf16 = [](const Tensor& t) { return t.to(kFloat32).to(kBFloat16); };
  auto wide = [](const Tensor& t) { return t.defined() ? t.to(kFloat64) : t; };
  auto once = [](const Tensor& ref64) { return ref64.to(kBFloat16); };
  const Tensor x = bf16(pattern({4, 16}, 7, 23, 11, 7)), w = bf16(pattern({8, 16}, 5, 13, 6, 9)),
               b = bf16(pattern({8}, 3, 11, 5, 3));
  const Tensor g = bf16(pattern({16}, 3, 7, 3, 4)), h = bf16(pattern({16}, 5, 9, 4, 7));

  // A linear layer's bias is added to the float32 sums before the one rounding.
  Tensor lin = F::linear(x, w, b);
  CHECK(lin.dtype() == kBFloat16);
  CHECK(equal(lin, once(F::linear(wide(x), wide(w), wide(b)))));
  CHECK(lin.grad_fn() == nullptr);
  CHECK(!equal(x.matmul(w.t()) + b, lin));  // rounded twice, 15 of 32 values differ: the check tells
  CHECK(equal(F::linear(x.view({2, 2, 16}), w, b), lin.view({2, 2, 8})));  // a batch folded into one addmm
  const Tensor m = bf16(pattern({4, 8}, 3, 11, 5, 3));
  CHECK(equal(addmm(m, x, w.t(), 0.5, 2), once(addmm(wide(m), wide(x), wide(w).t(), 0.5, 2))));
  CHECK(equal(baddbmm(m.unsqueeze(0), x.unsqueeze(0), w.t().unsqueeze(0), 0.5, 2),
              once(baddbmm(wide(m).unsqueeze(0), wide(x).unsqueeze(0), wide(w).t().unsqueeze(0), 0.5, 2))));
  // A convolution's bias likewise.
  const Tensor img = bf16(pattern({1, 2, 5, 5}, 7, 23, 11, 7)), k = bf16(pattern({3, 2, 3, 3}, 5, 13, 6, 9)),
               kb = bf16(pattern({3}, 3, 11, 5, 3));
  Tensor conv = F::conv2d(img, k, kb, 1, 1);
  CHECK(equal(conv, once(F::conv2d(wide(img), wide(k), wide(kb), 1, 1))));
  CHECK(!equal(F::conv2d(img, k, Tensor(), 1, 1) + kb.view({1, 3, 1, 1}), conv));
  // The fused row loop: a masked (-inf) position is exactly 0, a NaN makes its row NaN.
  const double inf = std::numeric_limits<double>::infinity();
  Tensor masked = softmax(tensor({0, -inf, 0, 1, std::nan(""), 2}, {2, 3}).to(kBFloat16), 1).to(kFloat64);
  CHECK(masked[0][0].item<double>() == 0.5);
  CHECK(masked[0][1].item<double>() == 0);
  CHECK(masked[0][2].item<double>() == 0.5);
  CHECK(std::isnan(masked[1][0].item<double>()));
  CHECK(std::isnan(masked[1][2].item<double>()));
  CHECK(allclose(softmax(tensor({-200, 0, -1000}), 0), tensor({0, 1, 0})));
  // softmax, log_softmax and layer_norm compute in float32 inside.
  CHECK(equal(softmax(x, 1), once(softmax(wide(x), 1))));
  CHECK(equal(log_softmax(x, 1), once(log_softmax(wide(x), 1))));
  Tensor ln = F::layer_norm(x, {16}, g, h);
  CHECK(equal(ln, once(F::layer_norm(wide(x), {16}, wide(g), wide(h)))));
  // Built of bfloat16 steps, each rounded, it differs.
  Tensor c = x - x.mean({1}, true);
  CHECK(!equal(c * ((c * c).mean({1}, true) + 1e-5).pow(-0.5) * g + h, ln));
  // Gradients come back in each input's type, near the float64 ones.
  Tensor xg = x.detach().requires_grad_(true), x64 = wide(x).requires_grad_(true);
  const Tensor up = bf16(pattern({4, 16}, 5, 17, 8, 9));
  F::layer_norm(xg, {16}, g, h).backward(up);
  F::layer_norm(x64, {16}, wide(g), wide(h)).backward(wide(up));
  CHECK(xg.grad().dtype() == kBFloat16);
  CHECK(allclose(xg.grad().to(kFloat64), x64.grad(), 0.02, 0.02));
}

TEST_CASE("in-place ops store a wider result into a 16-bit tensor, rounded once") {
  auto bf16 = [](const Tensor& t) { return t.to(kFloat32).to(kBFloat16); };
  // A mixed-precision optimizer's p.add_(update): bfloat16 weights, a float32 update.
  Tensor p = bf16(pattern({64}, 7, 23, 11, 7)), u = pattern({64}, 5, 13, 6, 9).to(kFloat32);
  const Tensor want = (p.to(kFloat64) + u.to(kFloat64)).to(kBFloat16);
  const Tensor rounded_first = p + u.to(kBFloat16);
  p.add_(u);
  CHECK(p.dtype() == kBFloat16);
  CHECK(equal(p, want));
  CHECK(!equal(rounded_first, want));  // the update rounded to bfloat16 first loses some of it
  Tensor q = bf16(pattern({8}, 3, 7, 3, 4));
  q.mul_(tensor({0.1}, kFloat64));
  CHECK(equal(q, (bf16(pattern({8}, 3, 7, 3, 4)).to(kFloat64) * 0.1).to(kBFloat16)));
  Tensor i = zeros({4}, kInt32);
  i.add_(tensor({1, 2, 3, 4}, kInt64));  // an integer result into a narrower integer: allowed, as PyTorch
  CHECK(equal(i, tensor({1, 2, 3, 4}, kInt32)));
  CHECK_THROWS_WITH(zeros({4}, kInt64).add_(ones({4})),
                    "result type float can't be cast to the desired output type long int in add_");
}

TEST_CASE("autocast casts by PyTorch's CUDA lists, kept in one table") {
  AutocastGuard autocast(kBFloat16);
  const Tensor a = rand({4, 8}), b = rand({8, 3}), m = rand({4, 3});
  // lower_precision_fp: the guard's type, float32 operands or not.
  CHECK(addmm(m, a, b).dtype() == kBFloat16);
  CHECK(baddbmm(m.unsqueeze(0), a.unsqueeze(0), b.unsqueeze(0)).dtype() == kBFloat16);
  CHECK(a.mm(b).dtype() == kBFloat16);
  CHECK(F::linear(a, b.t(), ones({3})).dtype() == kBFloat16);
  // fp32: bfloat16 inputs computed in float32.
  const Tensor low = a.to(kBFloat16);
  CHECK(low.exp().dtype() == kFloat32);
  CHECK(low.log().dtype() == kFloat32);
  CHECK(low.pow(2).dtype() == kFloat32);
  CHECK(low.norm().dtype() == kFloat32);
  CHECK(low.logsumexp({1}).dtype() == kFloat32);
  CHECK(nn::NLLLoss()(log_softmax(low, 1).to(kBFloat16), tensor({0, 1, 2, 3}, kInt64)).dtype() == kFloat32);
  CHECK(nn::BCEWithLogitsLoss()(low, rand({4, 8}).to(kBFloat16)).dtype() == kFloat32);
  CHECK(nn::MSELoss()(low, low).dtype() == kFloat32);
  // On no list: the input's own type.
  CHECK(low.relu().dtype() == kBFloat16);
  CHECK(low.sum().dtype() == kBFloat16);
}
