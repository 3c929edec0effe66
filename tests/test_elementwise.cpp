// Broadcasting, dtype promotion, comparisons and in-place ops (CLAIMS 4, 6).
#include <catch2/catch.hpp>
#include <memlens/runtime.hpp>

using namespace memlens;

TEST_CASE("broadcasting shapes and values against hand-computed results") {
  Tensor col = tensor({1, 2, 3}, {3, 1});
  Tensor row = tensor({10, 20}, {1, 2});
  Tensor s = col + row;
  CHECK(s.sizes() == Shape{3, 2});
  CHECK(s.toString() == "tensor([[11., 21.],\n        [12., 22.],\n        [13., 23.]])");
  CHECK((row - col).toString() == "tensor([[ 9., 19.],\n        [ 8., 18.],\n        [ 7., 17.]])");
  CHECK((tensor({1, 2, 3}) * tensor({2})).toString() == "tensor([2., 4., 6.])");
  CHECK(broadcast_shapes({5, 1, 4}, {3, 1}) == Shape{5, 3, 4});
  CHECK(broadcast_shapes({}, {2, 2}) == Shape{2, 2});
  CHECK((ones({2, 3, 4}) / ones({4})).sizes() == Shape{2, 3, 4});
}

TEST_CASE("the seed's (100 ) - (100 1) broadcasts to (100 100)") {
  Tensor pred = arange(100).to(kFloat32);              // (100,)
  Tensor y = arange(100).to(kFloat32).view({100, 1});  // (100,1)
  Tensor d = pred - y;
  CHECK(d.sizes() == Shape{100, 100});
  // d[i][j] = pred[j] - y[i]
  CHECK(d.index({3, 7}).item<double>() == 4.0);
  CHECK(d.index({7, 3}).item<double>() == -4.0);
  CHECK(d.abs().sum().item<double>() == 333300.0);  // sum over i,j of |i - j|
}

TEST_CASE("mismatched shapes name the dimension") {
  CHECK_THROWS_AS(ones({2, 3}) + ones({2, 4}), ShapeError);
  CHECK_THROWS_WITH(ones({2, 3}) + ones({2, 4}),
                    "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1");
}

TEST_CASE("dtype promotion follows PyTorch") {
  Tensor i = arange(3), f = ones({3}), d = ones({3}, kFloat64);
  CHECK((i + i).dtype() == kInt64);
  CHECK((i + f).dtype() == kFloat32);
  CHECK((f + d).dtype() == kFloat64);
  CHECK((i * 2).dtype() == kInt64);
  CHECK((i * 0.5).dtype() == kFloat32);
  CHECK((i / 2).dtype() == kFloat32);  // true division
  CHECK((i / 2).toString() == "tensor([0.0000, 0.5000, 1.0000])");
  CHECK((f + scalar_tensor(1.0, kFloat64)).dtype() == kFloat32);  // a 0-dim tensor does not widen
  CHECK(i.exp().dtype() == kFloat32);
  CHECK((i > 1).dtype() == kBool);
}

TEST_CASE("math functions compute the right values") {
  Tensor x = tensor({-2, -0.5, 0.5, 2}, kFloat64);
  CHECK(allclose(x.abs(), tensor({2, 0.5, 0.5, 2}, kFloat64)));
  CHECK(allclose(x.relu(), tensor({0, 0, 0.5, 2}, kFloat64)));
  CHECK(allclose(x.neg(), tensor({2, 0.5, -0.5, -2}, kFloat64)));
  CHECK(allclose(x.exp(), tensor({std::exp(-2.0), std::exp(-0.5), std::exp(0.5), std::exp(2.0)}, kFloat64)));
  CHECK(allclose(x.abs().log(), tensor({std::log(2.0), std::log(0.5), std::log(0.5), std::log(2.0)}, kFloat64)));
  CHECK(allclose(x.abs().sqrt(), tensor({std::sqrt(2.0), std::sqrt(0.5), std::sqrt(0.5), std::sqrt(2.0)}, kFloat64)));
  CHECK(allclose(
      x.sigmoid(),
      tensor({1 / (1 + std::exp(2.0)), 1 / (1 + std::exp(0.5)), 1 / (1 + std::exp(-0.5)), 1 / (1 + std::exp(-2.0))}, kFloat64)));
  CHECK(allclose(x.tanh(), tensor({std::tanh(-2.0), std::tanh(-0.5), std::tanh(0.5), std::tanh(2.0)}, kFloat64)));
  CHECK(allclose(x.pow(2), tensor({4, 0.25, 0.25, 4}, kFloat64)));
  CHECK(allclose(x.abs().pow(tensor({1, 2, 3, 0.5}, kFloat64)), tensor({2, 0.25, 0.125, std::sqrt(2.0)}, kFloat64)));
  CHECK(allclose(x.clamp(-1, 1), tensor({-1, -0.5, 0.5, 1}, kFloat64)));
  CHECK(allclose(1 - x, tensor({3, 1.5, 0.5, -1}, kFloat64)));
  CHECK(allclose(1 / x, tensor({-0.5, -2, 2, 0.5}, kFloat64)));
  CHECK(allclose(where(x > 0, x, zeros_like(x)), x.relu()));
}

TEST_CASE("where selects and never multiplies: the branch not taken cannot make NaN") {
  // PyTorch: torch.where(x > 0, x.log(), torch.zeros(3)) is tensor([0., 0., 0.6931]).
  Tensor x = tensor({-1, 0, 2});
  Tensor y = where(x > 0, x.log(), zeros_like(x));
  CHECK(y.index({0}).item<double>() == 0.0);
  CHECK(y.index({1}).item<double>() == 0.0);
  CHECK(y.index({2}).item<double>() == Approx(std::log(2.0)));
  // Broadcast condition and branches, and the wider type of the two branches.
  Tensor z = where(tensor({1, 0}, {2, 1}) > 0, tensor({1, 2, 3}, kFloat64), tensor({0}, kFloat64));
  CHECK(z.dtype() == kFloat64);
  CHECK(z.toString() == "tensor([[1., 2., 3.],\n        [0., 0., 0.]], dtype=torch.float64)");
  // Gradients go to the branch taken only, summed back to each branch's shape.
  Tensor a = tensor({1, 2, 3}).requires_grad_(true), b = tensor({5}).requires_grad_(true);
  where(tensor({1, 0, 1}) > 0, a, b).sum().backward();
  CHECK(a.grad().toString() == "tensor([1., 0., 1.])");
  CHECK(b.grad().toString() == "tensor([1.])");
}

TEST_CASE("scalar_tensor, scalar division and integer powers follow PyTorch") {
  // torch.scalar_tensor(3).dtype is torch.float32.
  CHECK(scalar_tensor(3).dtype() == kFloat32);
  CHECK(scalar_tensor(3, kInt64).dtype() == kInt64);
  // 2 / torch.arange(1, 4) is tensor([2.0000, 1.0000, 0.6667]): true division to float.
  Tensor q = 2 / arange(1, 4);
  CHECK(q.dtype() == kFloat32);
  CHECK(allclose(q, tensor({2.0, 1.0, 2.0 / 3.0})));
  // Its gradient: d(2/x)/dx = -2/x^2.
  Tensor x = tensor({1, 2, 4}).requires_grad_(true);
  (2 / x).sum().backward();
  CHECK(allclose(x.grad(), tensor({-2.0, -0.5, -0.125})));
  // torch.arange(1, 4).pow(-1) raises "Integers to negative integer powers are not allowed."
  CHECK_THROWS_WITH(arange(1, 4).pow(-1), "Integers to negative integer powers are not allowed.");
  CHECK(allclose(arange(1, 4).to(kFloat32).pow(-1), tensor({1.0, 0.5, 1.0 / 3.0})));
}

TEST_CASE("comparisons give bool tensors") {
  Tensor a = tensor({1, 2, 3}), b = tensor({3, 2, 1});
  CHECK((a == b).toString() == "tensor([False,  True, False])");
  CHECK((a != b).toString() == "tensor([ True, False,  True])");
  CHECK((a < b).toString() == "tensor([ True, False, False])");
  CHECK((a <= b).toString() == "tensor([ True,  True, False])");
  CHECK((a > 2).toString() == "tensor([False, False,  True])");
  CHECK((a >= 2).sum().item<std::int64_t>() == 2);
}

TEST_CASE("claim 6 is false: x + y with y of shape (1) allocates only the 4 MB output") {
  Tensor x = rand({1000, 1000}, Device("sim"));
  Tensor y = rand({1}, Device("sim"));
  reset_peak_memory_stats(Device("sim"));
  std::int64_t base = memory_allocated(Device("sim"));
  Tensor z = x + y;
  CHECK(memory_allocated(Device("sim")) - base == 4000256);      // 4,000,000 B rounded to 512
  CHECK(max_memory_allocated(Device("sim")) - base == 4000256);  // nothing larger existed meanwhile
  Tensor z2 = x + y.expand_as(x);
  CHECK(equal(z, z2));
}

TEST_CASE("claim 4: in-place ops allocate nothing and bump the version") {
  Tensor a = ones({256, 256});
  Tensor b = rand({256, 256});
  std::int64_t before = memory_allocated(kCPU);
  std::uint32_t v = a._version();
  a.add_(b);
  a.sub_(b);
  a.mul_(2);
  a.div_(2);
  a += b;
  a -= b;
  a *= b;
  a /= b;
  a.clamp_(0, 10);
  a.zero_();
  a.fill_(3);
  a.copy_(b);
  CHECK(memory_allocated(kCPU) == before);
  CHECK(a._version() == v + 12);
  CHECK(equal(a, b));
  Tensor c = ones({3});
  c += tensor({1, 2, 3});
  c *= 2;
  CHECK(c.toString() == "tensor([4., 6., 8.])");
  c.add_(tensor({1, 1, 1}), 10);
  CHECK(c.toString() == "tensor([14., 16., 18.])");
}

TEST_CASE("in-place ops refuse what cannot be written") {
  Tensor i = arange(3);
  CHECK_THROWS_AS(i.add_(1.5), TypeError);
  CHECK_THROWS_WITH(i.add_(ones({3})), "result type float can't be cast to the desired output type long int in add_");
  Tensor small = ones({3});
  CHECK_THROWS_WITH(small.add_(ones({2, 3})), "output with shape [3] doesn't match the broadcast shape [2, 3]");
  CHECK_THROWS_AS(ones({3}, kBool).neg(), TypeError);
}

TEST_CASE("copy_ broadcasts - converts dtype and crosses devices") {
  Tensor dst = zeros({2, 3}, Device("sim"));
  dst.copy_(arange(3));
  CHECK(dst.cpu().toString() == "tensor([[0., 1., 2.],\n        [0., 1., 2.]])");
  dst.index({1}).copy_(tensor({7, 8, 9}));
  CHECK(dst.sum().item<double>() == 27.0);
}
