// Gradients against finite differences for every differentiable op, and autograd's rules
// (CLAIMS 13, 14).
#include <catch2/catch.hpp>
#include <memlens/runtime.hpp>

#include "gradcheck.hpp"

using namespace memlens;
using memlens::testing::gradcheck_error;
using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

namespace {
Tensor r(Shape s, double lo = -1, double hi = 1) { return rand(s, kFloat64) * (hi - lo) + lo; }
Tensor pos(Shape s) { return r(s, 0.5, 2); }
const auto& I(const std::vector<Tensor>& v, std::size_t i) { return v[i]; }
struct Case {
  const char* name;
  Fn f;
  std::vector<Tensor> in;
};
}  // namespace

TEST_CASE("finite-difference gradients of elementwise ops - with broadcasting") {
  manual_seed(7);
  std::vector<Case> cases = {
      {"add", [](auto& v) { return (I(v, 0) + I(v, 1)).pow(2).sum(); }, {r({3, 4}), r({4})}},
      {"add alpha", [](auto& v) { return I(v, 0).add(I(v, 1), 3).pow(2).sum(); }, {r({3, 1}), r({1, 4})}},
      {"sub", [](auto& v) { return (I(v, 0) - I(v, 1)).pow(2).sum(); }, {r({2, 3}), r({2, 1})}},
      {"mul", [](auto& v) { return (I(v, 0) * I(v, 1)).sum(); }, {r({3, 4}), r({3, 1})}},
      {"div", [](auto& v) { return (I(v, 0) / I(v, 1)).sum(); }, {r({3, 4}), pos({4})}},
      {"pow scalar", [](auto& v) { return I(v, 0).pow(3).sum(); }, {r({5})}},
      {"pow tensor", [](auto& v) { return I(v, 0).pow(I(v, 1)).sum(); }, {pos({4}), r({4})}},
      {"scalar ops", [](auto& v) { return ((I(v, 0) + 2) * 3 - 1).div(4).pow(2).sum(); }, {r({4})}},
      {"rsub rdiv", [](auto& v) { return ((1 - I(v, 0)) * (2 / I(v, 0))).sum(); }, {pos({4})}},
      {"neg", [](auto& v) { return (-I(v, 0) * I(v, 0)).sum(); }, {r({4})}},
      {"exp", [](auto& v) { return I(v, 0).exp().sum(); }, {r({4})}},
      {"log", [](auto& v) { return I(v, 0).log().sum(); }, {pos({4})}},
      {"sqrt", [](auto& v) { return I(v, 0).sqrt().sum(); }, {pos({4})}},
      {"abs", [](auto& v) { return (I(v, 0).abs() * I(v, 0)).sum(); }, {r({6})}},
      {"relu", [](auto& v) { return (I(v, 0).relu() * I(v, 0)).sum(); }, {r({6})}},
      {"sigmoid", [](auto& v) { return I(v, 0).sigmoid().sum(); }, {r({4})}},
      {"tanh", [](auto& v) { return I(v, 0).tanh().sum(); }, {r({4})}},
      {"clamp", [](auto& v) { return (I(v, 0).clamp(-0.5, 0.5) * I(v, 0)).sum(); }, {r({8})}},
      {"where", [](auto& v) { return where(I(v, 0) > 0, I(v, 0), I(v, 1)).pow(2).sum(); }, {r({6}), r({6})}},
  };
  for (auto& c : cases) {
    INFO(c.name);
    CHECK(gradcheck_error(c.f, c.in) < 1e-6);
  }
}

TEST_CASE("finite-difference gradients of reductions - matmul and einsum") {
  manual_seed(8);
  std::vector<Case> cases = {
      {"sum dims", [](auto& v) { return I(v, 0).sum({1}).pow(2).sum(); }, {r({3, 4})}},
      {"sum keepdim", [](auto& v) { return (I(v, 0).sum({0}, true) * I(v, 0)).sum(); }, {r({3, 4})}},
      {"mean", [](auto& v) { return I(v, 0).mean() * I(v, 0).mean({0}).sum(); }, {r({3, 4})}},
      {"max", [](auto& v) { return I(v, 0).max() * 2; }, {r({3, 4})}},
      {"min", [](auto& v) { return I(v, 0).min() * 2; }, {r({3, 4})}},
      {"max dim", [](auto& v) { return std::get<0>(I(v, 0).max(1)).pow(2).sum(); }, {r({3, 4})}},
      {"min dim keepdim", [](auto& v) { return std::get<0>(I(v, 0).min(0, true)).pow(2).sum(); }, {r({3, 4})}},
      {"mm", [](auto& v) { return I(v, 0).mm(I(v, 1)).pow(2).sum(); }, {r({3, 4}), r({4, 2})}},
      {"mm transposed", [](auto& v) { return I(v, 0).t().mm(I(v, 1).t()).pow(2).sum(); }, {r({4, 3}), r({2, 4})}},
      {"bmm", [](auto& v) { return I(v, 0).bmm(I(v, 1)).pow(2).sum(); }, {r({2, 3, 4}), r({2, 4, 2})}},
      {"matmul vec", [](auto& v) { return I(v, 0).matmul(I(v, 1)).pow(2).sum(); }, {r({3, 4}), r({4})}},
      {"matmul dot", [](auto& v) { return I(v, 0).matmul(I(v, 1)); }, {r({4}), r({4})}},
      {"matmul batched broadcast", [](auto& v) { return I(v, 0).matmul(I(v, 1)).pow(2).sum(); }, {r({2, 3, 4}), r({4, 2})}},
      {"einsum contraction",
       [](auto& v) {
         return einsum("ij,jk->ik", {I(v, 0), I(v, 1)}).pow(2).sum();
       },
       {r({3, 4}), r({4, 2})}},
      {"einsum trace", [](auto& v) { return einsum("ii->", {I(v, 0)}) * einsum("ii->", {I(v, 0)}); }, {r({3, 3})}},
      {"einsum batch",
       [](auto& v) {
         return einsum("bij,bjk->bik", {I(v, 0), I(v, 1)}).pow(2).sum();
       },
       {r({2, 2, 3}), r({2, 3, 2})}},
      {"einsum outer",
       [](auto& v) {
         return einsum("i,j->ij", {I(v, 0), I(v, 1)}).pow(2).sum();
       },
       {r({3}), r({2})}},
      {"log_softmax", [](auto& v) { return (log_softmax(I(v, 0), 1) * I(v, 1)).sum(); }, {r({3, 4}), r({3, 4})}},
      {"softmax", [](auto& v) { return (softmax(I(v, 0), 0) * I(v, 1)).sum(); }, {r({3, 4}), r({3, 4})}},
  };
  for (auto& c : cases) {
    INFO(c.name);
    CHECK(gradcheck_error(c.f, c.in) < 1e-6);
  }
}

TEST_CASE("finite-difference gradients through views and copies") {
  manual_seed(9);
  using namespace memlens::indexing;
  Tensor w = r({2, 3, 4});  // weights make every position's gradient distinct
  std::vector<Case> cases = {
      {"view",
       [](auto& v) {
         return I(v, 0).view({4, 6}).pow(2).sum();
       },
       {r({2, 3, 4})}},
      {"reshape copy", [](auto& v) { return I(v, 0).transpose(0, 2).reshape({-1}).pow(3).sum(); }, {r({2, 3, 4})}},
      {"transpose", [w](auto& v) { return (I(v, 0).transpose(0, 1).contiguous() * w.transpose(0, 1)).sum(); }, {r({2, 3, 4})}},
      {"permute",
       [w](auto& v) {
         return (I(v, 0).permute({2, 0, 1}) * w.permute({2, 0, 1})).sum();
       },
       {r({2, 3, 4})}},
      {"t", [](auto& v) { return I(v, 0).t().mm(I(v, 0)).sum(); }, {r({3, 2})}},
      {"expand",
       [w](auto& v) {
         return (I(v, 0).expand({2, 3, 4}) * w).sum();
       },
       {r({3, 1})}},
      {"expand_as", [w](auto& v) { return (I(v, 0).expand_as(w) * w).sum(); }, {r({4})}},
      {"squeeze unsqueeze", [](auto& v) { return I(v, 0).unsqueeze(1).squeeze().pow(2).sum(); }, {r({3, 4})}},
      {"flatten", [](auto& v) { return I(v, 0).flatten(1).pow(3).sum(); }, {r({2, 3, 4})}},
      {"narrow", [](auto& v) { return I(v, 0).narrow(1, 1, 2).pow(2).sum(); }, {r({3, 4})}},
      {"select", [](auto& v) { return I(v, 0).select(0, 1).pow(2).sum(); }, {r({3, 4})}},
      {"slice step", [](auto& v) { return I(v, 0).slice(1, 0, 4, 2).pow(2).sum(); }, {r({3, 4})}},
      {"index",
       [](auto& v) {
         return I(v, 0).index({Slice(1), None, -1}).pow(2).sum();
       },
       {r({3, 4})}},
      {"diagonal", [](auto& v) { return I(v, 0).diagonal().pow(2).sum(); }, {r({3, 3})}},
      {"index_select",
       [](auto& v) {
         return I(v, 0).index_select(0, tensor({2, 0, 2}, kInt64)).pow(2).sum();
       },
       {r({3, 4})}},
      {"gather",
       [](auto& v) {
         return I(v, 0).gather(1, tensor({0, 2, 2, 1, 3, 3}, kInt64).view({3, 2})).pow(2).sum();
       },
       {r({3, 4})}},
      {"masked_select", [](auto& v) { return I(v, 0).masked_select(I(v, 0) > 0).pow(2).sum(); }, {r({3, 4})}},
      {"cat",
       [](auto& v) {
         return cat({I(v, 0), I(v, 1) * 2}, 1).pow(2).sum();
       },
       {r({2, 2}), r({2, 3})}},
      {"clone contiguous", [](auto& v) { return I(v, 0).t().contiguous().clone().pow(2).sum(); }, {r({2, 3})}},
      {"to device and back", [](auto& v) { return I(v, 0).to(Device("sim")).pow(2).cpu().sum(); }, {r({3})}},
      {"in-place on a non-leaf",
       [](auto& v) {
         Tensor h = I(v, 0) * 1;
         h.mul_(I(v, 1));
         h += 1;
         return h.pow(2).sum();
       },
       {r({4}), r({4})}},
      {"in-place on a view of a non-leaf",
       [](auto& v) {
         Tensor h = I(v, 0) * 2;
         h[1].mul_(I(v, 1));  // the written row's gradient goes through mul
         h.slice(1, 0, 2).add_(I(v, 1).index({Slice(0, 2)}));
         return (h * h).sum();
       },
       {r({3, 4}), r({4})}},
      {"a view filled in place",
       [](auto& v) {
         Tensor h = I(v, 0).pow(2);
         h.narrow(0, 1, 2).fill_(3);  // no gradient reaches the overwritten elements
         return (h * I(v, 0)).sum();
       },
       {r({4})}},
      {"a buffer filled through its views",
       [](auto& v) {
         Tensor buf = zeros({2, 3}, kFloat64);
         buf[0].copy_(I(v, 0).pow(2));
         buf[1] = I(v, 0) * I(v, 1);  // assignment to a temporary view writes through
         return (buf.t().matmul(buf)).sum();
       },
       {r({3}), r({3})}},
      {"two index tensors",
       [](auto& v) {
         return I(v, 0).index({tensor({0, 2, 0}, kInt64), Slice(), tensor({1, 0, 1}, kInt64)}).pow(2).sum();
       },
       {r({3, 2, 2})}},
      {"index_put_ accumulating",
       [](auto& v) {
         Tensor h = I(v, 0) * 1;
         h.index_put_({tensor({0, 2, 0}, kInt64)}, I(v, 1) * I(v, 1), true);
         return (h * h).sum();
       },
       {r({3, 2}), r({2})}},
      {"a view read after its base changed",
       [](auto& v) {
         Tensor h = I(v, 0) * 1;
         Tensor early = h.narrow(0, 0, 2);  // made before the write: its history is rebuilt
         h.mul_(I(v, 0));
         return (early * early).sum() + h.sum();
       },
       {r({3})}},
  };
  for (auto& c : cases) {
    INFO(c.name);
    CHECK(gradcheck_error(c.f, c.in) < 1e-6);
  }
}

// Gradients PyTorch 1.13 gives for the same programs (python3-torch, CPU), typed in.
TEST_CASE("in-place writes through views of non-leaves match PyTorch") {
  Tensor x0 = tensor({1, 2, 3, 4}, requires_grad());
  Tensor y = x0.reshape({2, 2}) * 2;
  y[0].mul_(3);
  CHECK(y.grad_fn()->name() == "CopySlices");
  CHECK(y.toString() == "tensor([[ 6., 12.],\n        [ 6.,  8.]], grad_fn=<CopySlices>)");
  (y * y).sum().backward();
  // d/dx (6x)^2 = 72x on the written row, d/dx (2x)^2 = 8x on the other
  CHECK(x0.grad().toString() == "tensor([ 72., 144.,  24.,  32.])");

  Tensor w = tensor({5, 6, 7}, requires_grad());
  Tensor buf = zeros({2, 3});
  CHECK_FALSE(buf.requires_grad());
  buf[1].copy_(w * w);  // a plain buffer takes history from what is written into it
  CHECK(buf.requires_grad());
  CHECK(buf.toString() == "tensor([[ 0.,  0.,  0.],\n        [25., 36., 49.]], grad_fn=<CopySlices>)");
  (buf * 3).sum().backward();
  CHECK(w.grad().toString() == "tensor([30., 36., 42.])");

  Tensor x3 = tensor({1, 2}, requires_grad());
  Tensor y3 = x3 * 2;
  Tensor early = y3.view({2});
  y3.mul_(3);
  CHECK(early.grad_fn()->name() == "AsStridedBackward0");
  early.sum().backward();
  CHECK(x3.grad().toString() == "tensor([6., 6.])");

  // A saved output overwritten through a view is still caught.
  Tensor e = tensor({1, 2, 3}, requires_grad()).exp();
  e.narrow(0, 1, 1).fill_(1);
  CHECK_THROWS_AS(e.sum().backward(), AutogradError);
}

TEST_CASE("backward gives known gradients and accumulates") {
  Tensor x = tensor({1, 2, 3}, requires_grad());
  Tensor y = (x * x).sum();
  y.backward();
  CHECK(x.grad().toString() == "tensor([2., 4., 6.])");
  (x * 3).sum().backward();
  CHECK(x.grad().toString() == "tensor([5., 7., 9.])");  // accumulated
  x.grad().zero_();
  CHECK(x.grad().sum().item<double>() == 0.0);
  // backward with an explicit gradient for a non-scalar output
  Tensor z = x * 2;
  z.backward(tensor({1, 0, 1}));
  CHECK(x.grad().toString() == "tensor([2., 0., 2.])");
  // Through a dtype conversion the gradient comes back in the input's dtype.
  Tensor d = tensor({0.5, 0.25}, TensorOptions(kFloat64).requires_grad(true));
  d.to(kFloat32).pow(2).sum().backward();
  CHECK(d.grad().dtype() == kFloat64);
  CHECK(d.grad().toString() == "tensor([1.0000, 0.5000], dtype=torch.float64)");
}

TEST_CASE("leaf and non-leaf rules") {
  Tensor x = rand({3}, requires_grad());
  CHECK(x.is_leaf());
  CHECK(x.requires_grad());
  Tensor y = x * 2;
  CHECK_FALSE(y.is_leaf());
  CHECK(y.requires_grad());
  CHECK(y.grad_fn()->name() == "MulBackward1");
  CHECK_THROWS_AS(y.requires_grad_(false), AutogradError);
  CHECK_THROWS_WITH(arange(3).requires_grad_(), "only Tensors of floating point dtype can require gradients (got long int)");
  CHECK_THROWS_WITH(ones({2}).sum().backward(), "element 0 of tensors does not require grad and does not have a grad_fn");
  CHECK_THROWS_WITH(y.backward(), "grad can be implicitly created only for scalar outputs");
}

TEST_CASE("claim 13: y = x[0] - y += 1 is refused for a leaf that requires grad") {
  Tensor x = rand({3}, requires_grad());
  Tensor y = x[0];  // legal
  CHECK_THROWS_AS(y += 1, AutogradError);
  CHECK_THROWS_WITH(y += 1,
                    "a view of a leaf Variable that requires grad is being used in an in-place operation. "
                    "(leaf: tensor " +
                        std::to_string(x.id()) + " of shape [3]; view of shape [])");
  CHECK_THROWS_WITH(x.add_(1),
                    "a leaf Variable that requires grad is being used in an in-place operation. (leaf: "
                    "tensor " +
                        std::to_string(x.id()) + " of shape [3])");
  CHECK_THROWS_AS(x.zero_(), AutogradError);
  CHECK_THROWS_AS(x[0] = 5, AutogradError);
  // Under no_grad the same update is allowed (the optimiser's case).
  {
    NoGradGuard g;
    x -= 0.1;
    y += 1;
  }
  CHECK(x._version() == 2);
}

TEST_CASE("modifying a tensor saved for backward throws at backward - naming the op") {
  Tensor a = rand({3}, requires_grad());
  Tensor b = a.exp();  // saves its output
  Tensor c = b * 2;
  b.add_(1);  // b is a non-leaf: allowed, but ExpBackward0's saved output changed
  CHECK_THROWS_AS(c.sum().backward(), AutogradError);
  Tensor a2 = rand({3}, requires_grad());
  Tensor h = a2 * 1;
  Tensor p = h * h;  // MulBackward0 saves h
  h.mul_(3);
  CHECK_THROWS_WITH(p.sum().backward(),
                    "one of the variables needed for gradient computation has been modified by an inplace operation: "
                    "[torch.FloatTensor [3]], saved by MulBackward0, is at version 1; expected version 0 instead.");
}

TEST_CASE("a graph is freed after backward unless retained") {
  Tensor x = rand({3}, requires_grad());
  Tensor y = (x * x).sum();
  y.backward({}, true);
  y.backward();
  CHECK(allclose(x.grad(), x.detach() * 4));
  CHECK_THROWS_WITH(y.backward(), Catch::Matchers::StartsWith("Trying to backward through the graph a second time"));
}

TEST_CASE("claim 14: detach shares storage and stops gradients - no_grad records nothing") {
  Tensor x = rand({3}, requires_grad());
  Tensor d = x.detach();
  CHECK(d.storage() == x.storage());
  CHECK_FALSE(d.requires_grad());
  Tensor h = d * 2;
  CHECK_FALSE(h.requires_grad());
  CHECK(h.grad_fn() == nullptr);
  {
    NoGradGuard g;
    Tensor h2 = x * 2;
    CHECK_FALSE(h2.requires_grad());
    CHECK(h2.grad_fn() == nullptr);
  }
  d.zero_();  // in-place on the detached view is allowed and visible in x
  CHECK(x.sum().item<double>() == 0.0);
}

TEST_CASE("graph memory is freed with the graph") {
  Device sim("sim");
  Tensor x = rand({256, 256}, TensorOptions(sim).requires_grad(true));
  std::int64_t before = memory_allocated(sim);
  {
    Tensor loss = (x.exp() * x).sum();
    CHECK(memory_allocated(sim) > before);  // exp's output is saved for backward
    loss.backward();
  }
  x.set_grad(Tensor());
  CHECK(memory_allocated(sim) == before);
}

TEST_CASE("retain_grad keeps a non-leaf's gradient") {
  // PyTorch: x = tensor([1., 2.], requires_grad=True); y = x * 3; y.retain_grad();
  // (y * y).sum().backward() gives y.grad == 2y == tensor([6., 12.]), x.grad == tensor([18., 36.]).
  Tensor x = tensor({1, 2}).requires_grad_(true);
  Tensor y = x * 3;
  y.retain_grad();
  (y * y).sum().backward();
  REQUIRE(y.grad().defined());
  CHECK(y.grad().toString() == "tensor([ 6., 12.])");
  CHECK(x.grad().toString() == "tensor([18., 36.])");
  Tensor z = tensor({1.0});
  z.retain_grad();  // no grad_fn: nothing to do
  CHECK_FALSE(z.grad().defined());
}
