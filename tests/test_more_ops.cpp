// The rest of the ops a model reaches for (issue 17): joining and splitting, sorting,
// scans, statistics, logic, linear algebra shorthands, ranges and random fills; values
// worked out by hand, gradients against finite differences.
#include <catch2/catch.hpp>
#include <cmath>
#include <memlens/runtime.hpp>

#include "gradcheck.hpp"

using namespace memlens;
using memlens::testing::gradcheck_error;
using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

namespace {
Tensor r(Shape s, double lo = -1, double hi = 1) { return rand(s, kFloat64) * (hi - lo) + lo; }
Tensor t64(std::initializer_list<double> v) { return tensor(v, kFloat64); }
double at(const Tensor& t, std::int64_t i) { return t.reshape({-1})[i].item<double>(); }
}  // namespace

TEST_CASE("stack, split, chunk, unbind, flip, roll, repeat") {
  Tensor a = arange(6, kFloat64).view({2, 3});
  CHECK(stack({a, a}, 1).sizes() == Shape{2, 2, 3});
  CHECK(equal(stack({t64({1, 2}), t64({3, 4})}), tensor({1, 2, 3, 4}, {2, 2}, kFloat64)));
  auto parts = arange(7).split(3);
  REQUIRE(parts.size() == 3);
  CHECK(parts[2].numel() == 1);
  CHECK(parts[1].is_view());  // pieces are views
  CHECK(arange(7).chunk(3).size() == 3);
  CHECK(arange(6).chunk(4).size() == 3);  // pieces of 2, as PyTorch's
  auto rows = a.unbind(0);
  CHECK(equal(rows[1], t64({3, 4, 5})));
  CHECK(equal(a.flip({1}), tensor({2, 1, 0, 5, 4, 3}, {2, 3}, kFloat64)));
  CHECK(equal(a.flip({0, 1}), tensor({5, 4, 3, 2, 1, 0}, {2, 3}, kFloat64)));
  CHECK(equal(t64({1, 2, 3, 4}).roll(1, 0), t64({4, 1, 2, 3})));
  CHECK(equal(t64({1, 2, 3, 4}).roll(-5, 0), t64({2, 3, 4, 1})));
  CHECK(equal(t64({1, 2}).repeat({2, 2}), tensor({1, 2, 1, 2, 1, 2, 1, 2}, {2, 4}, kFloat64)));
  CHECK_THROWS_WITH(stack({}), "stack expects a non-empty TensorList");
  CHECK_THROWS_WITH(a.repeat({2}), "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor");
  manual_seed(20);
  Tensor w = r({2, 6});
  std::vector<std::pair<const char*, Fn>> cases = {
      {"stack",
       [](auto& v) {
         return (stack({v[0], v[0] * 2}, 0) * stack({v[0], v[0]}, 0)).sum();
       }},
      {"split",
       [](auto& v) {
         auto p = v[0].split(2, 1);
         return (p[0] * p[1]).sum() + p[2].sum();
       }},
      {"flip",
       [&](auto& v) {
         return (v[0].flip({0, 1}) * w).sum();
       }},
      {"roll", [&](auto& v) { return (v[0].roll(2, 1) * w).sum(); }},
      {"repeat",
       [](auto& v) {
         return v[0].repeat({2, 1}).pow(2).sum();
       }},
  };
  for (auto& [name, f] : cases) {
    INFO(name);
    CHECK(gradcheck_error(f, {r({2, 6})}) < 1e-6);
  }
}

TEST_CASE("sort, argsort, topk, nonzero") {
  Tensor x = t64({3, 1, 2, 1});
  auto [v, i] = x.sort();
  CHECK(equal(v, t64({1, 1, 2, 3})));
  CHECK(equal(i, tensor({1, 3, 2, 0}, kInt64)));  // stable: the first 1 first
  CHECK(equal(x.argsort(-1, true), tensor({0, 2, 1, 3}, kInt64)));
  auto [tv, ti] = tensor({1, 5, 3, 4, 2, 6}, {2, 3}, kFloat64).topk(2, 1);
  CHECK(equal(tv, tensor({5, 3, 6, 4}, {2, 2}, kFloat64)));
  CHECK(equal(ti, tensor({1, 2, 2, 0}, {2, 2}, kInt64)));
  auto [nv, ni] = t64({1, std::nan(""), 0}).sort();
  CHECK(std::isnan(nv[2].item<double>()));  // NaN sorts last, as the largest
  CHECK(equal(tensor({0, 2, 0, 3}, {2, 2}, kFloat64).nonzero(), tensor({0, 1, 1, 1}, {2, 2}, kInt64)));
  CHECK_THROWS_WITH(x.topk(5), "selected index k out of range");
  manual_seed(21);
  CHECK(gradcheck_error([](auto& v) { return (std::get<0>(v[0].sort(1)) * arange(5, kFloat64)).sum(); }, {r({3, 5})}) < 1e-6);
  CHECK(gradcheck_error([](auto& v) { return std::get<0>(v[0].topk(2, 0)).pow(2).sum(); }, {r({6, 2})}) < 1e-6);
}

TEST_CASE("cumsum, var, std, norm, logsumexp, amax, amin") {
  CHECK(equal(t64({1, 2, 3}).cumsum(0), t64({1, 3, 6})));
  CHECK(equal(tensor({1, 2, 3, 4}, {2, 2}, kFloat64).cumsum(1), tensor({1, 3, 3, 7}, {2, 2}, kFloat64)));
  CHECK(arange(4, kInt32).cumsum(0).dtype() == kInt64);
  Tensor x = t64({1, 2, 3, 4});
  CHECK(x.var({0}).item<double>() == Approx(5.0 / 3));  // sum of squared deviations 5, over n - 1
  CHECK(x.var({0}, false).item<double>() == Approx(1.25));
  CHECK(x.std({0}).item<double>() == Approx(std::sqrt(5.0 / 3)));
  CHECK(t64({3, 4}).norm().item<double>() == Approx(5));
  CHECK(t64({3, -4}).norm(1).item<double>() == Approx(7));
  CHECK(t64({3, -4}).norm(INFINITY).item<double>() == Approx(4));
  CHECK(t64({1000, 1000}).logsumexp({0}).item<double>() == Approx(1000 + std::log(2.0)));  // no overflow
  Tensor m = tensor({1, 5, 3, 4, 2, 6}, {2, 3}, kFloat64);
  CHECK(equal(m.amax({1}), t64({5, 6})));
  CHECK(equal(m.amin({0}), t64({1, 2, 3})));
  CHECK(m.amax({0, 1}).item<double>() == 6);
  manual_seed(22);
  std::vector<std::pair<const char*, Fn>> cases = {
      {"cumsum", [](auto& v) { return (v[0].cumsum(1) * v[0]).sum(); }},
      {"var", [](auto& v) { return v[0].var({1}).sum(); }},
      {"std",
       [](auto& v) {
         return v[0].std({0, 1});
       }},
      {"norm", [](auto& v) { return v[0].norm(); }},
      {"norm 3", [](auto& v) { return v[0].norm(3); }},
      {"norm 1", [](auto& v) { return v[0].norm(1); }},
      {"norm 1.5", [](auto& v) { return v[0].norm(1.5); }},
      {"norm inf", [](auto& v) { return v[0].norm(INFINITY); }},
      {"amax",
       [](auto& v) {
         return (v[0].amax({1}) * t64({1, 2, 3})).sum();
       }},
      {"amin keepdim", [](auto& v) { return (v[0].amin({0}, true) * v[0]).sum(); }},
      {"logsumexp",
       [](auto& v) {
         return (v[0].logsumexp({1}) * t64({1, 2, 3})).sum();
       }},
  };
  for (auto& [name, f] : cases) {
    INFO(name);
    CHECK(gradcheck_error(f, {r({3, 4})}) < 1e-6);
  }
}

TEST_CASE("edge-case gradients are PyTorch's: constants, zeros, ties") {
  // Each worked by hand from PyTorch's backward formulas (std_backward, norm_backward,
  // amax's even split), which torch 2.x gives.
  auto grad = [](Tensor x, const Fn& f) {
    x = x.detach().requires_grad_(true);
    f({x}).backward();
    return x.grad();
  };
  // std of a constant: 0 where std is 0, not 0/0; the other row: (x - mean) / (std (n - 1)).
  CHECK(equal(grad(t64({2, 2, 2}), [](auto& v) { return v[0].std({}); }), t64({0, 0, 0})));
  Tensor rows = tensor({4, 4, 1, 3}, {2, 2}, kFloat64);
  Tensor g = grad(rows, [](auto& v) { return v[0].std({1}).sum(); });
  CHECK(at(g, 0) == 0);
  CHECK(at(g, 1) == 0);
  CHECK(at(g, 2) == Approx(-1 / std::sqrt(2.0)));
  CHECK(at(g, 3) == Approx(1 / std::sqrt(2.0)));
  // A norm at zero has gradient 0, for every p; p = 1 at a zero element is sign(0) = 0.
  CHECK(equal(grad(t64({0, 0, 0}), [](auto& v) { return v[0].norm(); }), t64({0, 0, 0})));
  CHECK(equal(grad(t64({0, 0}), [](auto& v) { return v[0].norm(3); }), t64({0, 0})));
  CHECK(equal(grad(t64({0, -2, 3}), [](auto& v) { return v[0].norm(1); }), t64({0, -1, 1})));
  // norm(p=0) counts the non-zeros and has no gradient.
  CHECK(t64({0, 2, 0, -1}).norm(0).item<double>() == 2);
  CHECK(equal(grad(t64({0, 2, 0, -1}), [](auto& v) { return v[0].norm(0); }), t64({0, 0, 0, 0})));
  // Ties share evenly: amax, amin, the inf norm (with the sign of each tied element).
  CHECK(equal(grad(t64({1, 3, 3}), [](auto& v) { return v[0].amax({}); }), t64({0, 0.5, 0.5})));
  CHECK(equal(grad(t64({1, 1, 3}), [](auto& v) { return v[0].amin({0}); }), t64({0.5, 0.5, 0})));
  CHECK(equal(grad(t64({3, -3, 1}), [](auto& v) { return v[0].norm(INFINITY); }), t64({0.5, -0.5, 0})));
  Tensor m = grad(tensor({1, 3, 3, 2, 2, 2}, {2, 3}, kFloat64), [](auto& v) { return v[0].amax({1}).sum(); });
  CHECK(allclose(m, tensor({0, 0.5, 0.5, 1.0 / 3, 1.0 / 3, 1.0 / 3}, {2, 3}, kFloat64)));
  CHECK(tensor({1.0, 2.0}, TensorOptions(kFloat64).requires_grad(true)).amax({}).grad_fn()->name() == "AmaxBackward0");
  CHECK(tensor({1.0, 2.0}, TensorOptions(kFloat64).requires_grad(true)).norm().grad_fn()->name() == "NormBackward1");
  CHECK(zeros({2, 3}, TensorOptions().requires_grad(true)).t().grad_fn()->name() == "TBackward0");
}

TEST_CASE("maximum, minimum, rounding, isnan, logic") {
  Tensor a = t64({1, 5, std::nan("")}), b = t64({2, 3, 0});
  Tensor mx = maximum(a, b);
  CHECK(mx[0].item<double>() == 2);
  CHECK(mx[1].item<double>() == 5);
  CHECK(std::isnan(mx[2].item<double>()));  // NaN propagates
  CHECK(equal(minimum(t64({1, 5}), t64({2, 3})), t64({1, 3})));
  // A tie shares the gradient.
  Tensor p = t64({2}).requires_grad_(true), q = t64({2}).requires_grad_(true);
  maximum(p, q).sum().backward();
  CHECK(p.grad().item<double>() == 0.5);
  CHECK(q.grad().item<double>() == 0.5);
  CHECK(equal(t64({-1.5, 0.5, 1.5, 2.5}).floor(), t64({-2, 0, 1, 2})));
  CHECK(equal(t64({-1.5, 0.5}).ceil(), t64({-1, 1})));
  CHECK(equal(t64({0.5, 1.5, 2.5}).round(), t64({0, 2, 2})));  // half to even
  CHECK(equal(a.isnan(), tensor({0, 0, 1}, kBool)));
  CHECK(equal(logical_and(t64({1, 0, 2}), t64({1, 1, 0})), tensor({1, 0, 0}, kBool)));
  CHECK(equal(logical_or(t64({1, 0, 0}), t64({0, 0, 3})), tensor({1, 0, 1}, kBool)));
  CHECK(equal(t64({0, 2}).logical_not(), tensor({1, 0}, kBool)));
  manual_seed(23);
  CHECK(gradcheck_error([](auto& v) { return (maximum(v[0], v[1]) * minimum(v[0], v[1])).sum(); }, {r({5}), r({5})}) < 1e-6);
}

TEST_CASE("dot, mv, addmm, baddbmm, linspace, randperm, random fills") {
  CHECK(t64({1, 2, 3}).dot(t64({4, 5, 6})).item<double>() == 32);
  CHECK(equal(tensor({1, 2, 3, 4}, {2, 2}, kFloat64).mv(t64({1, 1})), t64({3, 7})));
  Tensor i = ones({2, 2}, kFloat64), m = tensor({1, 2, 3, 4}, {2, 2}, kFloat64);
  CHECK(equal(addmm(i, m, m, 2, 3), tensor({23, 32, 47, 68}, {2, 2}, kFloat64)));  // 2 + 3 * [7 10; 15 22]
  CHECK(equal(baddbmm(i, m.unsqueeze(0), m.unsqueeze(0), 0), m.mm(m).unsqueeze(0)));
  CHECK_THROWS_WITH(m.dot(m), "1D tensors expected, but got 2D and 2D tensors");
  CHECK(equal(linspace(0, 1, 5, kFloat64), t64({0, 0.25, 0.5, 0.75, 1})));
  CHECK(linspace(0, 1, 1).numel() == 1);
  manual_seed(24);
  Tensor perm = randperm(10);
  CHECK(equal(std::get<0>(perm.sort()), arange(10)));  // every number once
  Tensor u = empty({20000}, kFloat64);
  u.uniform_(2, 4);
  CHECK(u.min().item<double>() >= 2);
  CHECK(u.max().item<double>() < 4);
  CHECK(u.mean().item<double>() == Approx(3).margin(0.03));
  u.normal_(1, 2);
  CHECK(u.mean().item<double>() == Approx(1).margin(0.06));
  CHECK(u.std({0}).item<double>() == Approx(2).margin(0.06));
  u.bernoulli_(0.25);
  CHECK(u.mean().item<double>() == Approx(0.25).margin(0.015));
  Tensor leaf = zeros({2}, TensorOptions().requires_grad(true));
  CHECK_THROWS(leaf.uniform_());
}

TEST_CASE("PyTorch's semantics: indices, error kinds, in-place rules, max ties, cross-entropy forms") {
  Tensor a = arange(12).view({3, 4});
  CHECK(equal(a[tensor({-1}, kInt64)], a.narrow(0, 2, 1)));  // indexing counts from the end; index_select does not
  try {
    a.narrow(0, 2, 2);
    FAIL("narrow past the end did not throw");
  } catch (const IndexError&) {
    FAIL("narrow threw an IndexError; PyTorch raises a RuntimeError");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) == "start (2) + length (2) exceeds dimension size (3).");
  }
  CHECK_THROWS_WITH(zeros({3, 1}).expand({3, 4}).add_(1),
                    "unsupported operation: more than one element of the written-to tensor refers to a single memory "
                    "location. Please clone() the tensor before performing the operation.");
  Tensor x = tensor({1, 2}).requires_grad_(true);
  Tensor y = x * 2;
  CHECK_NOTHROW(y.requires_grad_(true));  // a computed tensor: nothing to change
  y.fill_(1);
  CHECK(y.requires_grad());
  CHECK(y.grad_fn()->name() == "FillBackward0");
  y.sum().backward();
  CHECK(equal(x.grad(), zeros({2})));  // the overwritten history gets a zero gradient
  // max along a dim sends the gradient to the index it returned; the full max shares it.
  Tensor t = tensor({1, 3, 3}).requires_grad_(true);
  std::get<0>(t.max(0)).backward();
  CHECK(equal(t.grad(), tensor({0, 1, 0})));
  t.set_grad(Tensor());
  t.max().backward();
  CHECK(equal(t.grad(), tensor({0, 0.5, 0.5})));
  nn::CrossEntropyLoss ce;
  CHECK(ce(zeros({1, 2}), tensor({0.5, 0.5}, {1, 2})).item<double>() == Approx(std::log(2.0)));  // probability targets
  CHECK(ce(zeros({3}), scalar_tensor(1, kInt64)).item<double>() == Approx(std::log(3.0)));       // unbatched
  CHECK_THROWS_WITH(ce(zeros({2, 3}), zeros({2, 2})),
                    "CrossEntropyLoss: expected target of dtype int64 (class indices) or class probabilities of the "
                    "input's shape, got float [2, 2]");
}

TEST_CASE("einsum with an ellipsis") {
  Tensor a = arange(24, kFloat64).view({2, 3, 4});
  CHECK(equal(einsum("...ij->...ji", {a}), a.transpose(1, 2)));
  CHECK(equal(einsum("...ij,...jk->...ik", {a, a.transpose(1, 2)}), a.matmul(a.transpose(1, 2))));
  CHECK(equal(einsum("b...->b", {a}), a.sum({1, 2})));
  CHECK(einsum("...i,i", {a, ones({4}, kFloat64)}).sizes() == Shape{2, 3});  // implicit output: the ellipsis dims
  Tensor row = arange(4, kFloat64);
  CHECK(equal(einsum("...j,...j->...", {a, row}), a.matmul(row)));  // [2, 3, 4] with [4]: broadcast
  CHECK_THROWS_WITH(
      einsum("...ijk->...", {row}),
      "einsum(): the number of subscripts in the equation (3) is more than the number of dimensions (1) for operand 0");
}

TEST_CASE("scatter and index_add: values and gradients") {
  Tensor z = zeros({2, 4}, kFloat64);
  Tensor idx = tensor({1, 3, 0, 2}, {2, 2}, kInt64), src = tensor({5, 6, 7, 8}, {2, 2}, kFloat64);
  CHECK(equal(z.scatter(1, idx, src), tensor({0, 5, 0, 6, 7, 0, 8, 0}, {2, 4}, kFloat64)));
  CHECK(equal(z.index_add(1, tensor({3, 0, 3}, kInt64), ones({2, 3}, kFloat64), 2),
              tensor({2, 0, 0, 4, 2, 0, 0, 4}, {2, 4}, kFloat64)));
  CHECK_THROWS_WITH(z.scatter(1, tensor({4, 0}, {1, 2}, kInt64), src),
                    "scatter(): index 4 is out of bounds for dimension 1 with size 4");
  CHECK_THROWS_WITH(z.index_add(0, tensor({2}, kInt64), ones({1, 4}, kFloat64)),
                    "index_add(): index 2 is out of bounds for dimension 0 with size 2");
  manual_seed(25);
  Tensor w = r({2, 4});
  CHECK(gradcheck_error([&](auto& v) { return (v[0].scatter(1, idx, v[1]) * w).sum(); }, {r({2, 4}), r({2, 2})}) < 1e-6);
  CHECK(gradcheck_error(
            [&](auto& v) {
              return (v[0].index_add(1, tensor({3, 0, 3}, kInt64), v[1], 0.5) * w).sum();
            },
            {r({2, 4}), r({2, 3})}) < 1e-6);
}

// Expected values are PyTorch 1.13's (python3-torch, CPU) for the same calls, typed in.
TEST_CASE("prod: values, integral results, gradients with and without zeros") {
  CHECK(arange(1, 6).prod().toString() == "tensor(120)");
  CHECK(tensor({1, 2, 3, 4}, kInt64).view({2, 2}).prod(0).toString() == "tensor([3, 8])");
  Tensor t = tensor({1, 2, 0, 3, 2, -1, 4, 0.5}, requires_grad());
  Tensor p = t.view({2, 4}).prod(1);
  CHECK(p.toString() == "tensor([ 0., -4.], grad_fn=<ProdBackward1>)");
  p.sum().backward();
  // Row 0 has one zero: only it gets the product of the others (6).
  CHECK(t.grad().toString() == "tensor([ 0.,  0.,  6.,  0., -2.,  4., -1., -8.])");
  Tensor t2 = tensor({1, 2, 3, -2}, requires_grad());
  Tensor q = t2.prod();
  q.backward();
  CHECK(q.item<double>() == -12.0);
  CHECK(t2.grad().toString() == "tensor([-12.,  -6.,  -4.,   6.])");
  Tensor t3 = tensor({0, 2, 0, 1, 2, 3}, requires_grad());
  Tensor k = t3.view({2, 3}).prod(1, true);
  CHECK(k.sizes() == Shape{2, 1});
  k.sum().backward();
  CHECK(t3.grad().toString() == "tensor([0., 0., 0., 6., 3., 2.])");  // two zeros: none
  manual_seed(4);
  CHECK(gradcheck_error([](auto& x) { return x[0].prod(1).sum() + x[0].prod(); }, {r({3, 4}, 0.5, 1.5)}) < 1e-6);
}
