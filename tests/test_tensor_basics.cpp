// Creation, dtypes, printing and metadata.
#include <catch2/catch.hpp>
#include <memlens/runtime.hpp>

using namespace memlens;

TEST_CASE("creation functions give the right shapes - dtypes and values") {
  CHECK(zeros({2, 3}).sizes() == Shape{2, 3});
  CHECK(zeros({2, 3}).dtype() == kFloat32);
  CHECK(ones({4}).sum().item<double>() == 4.0);
  CHECK(full({2, 2}, 7).dtype() == kInt64);
  CHECK(full({2, 2}, 7.5).dtype() == kFloat32);
  CHECK(full({2, 2}, 7.5).sum().item<double>() == 30.0);
  CHECK(full({1}, true).dtype() == kBool);
  CHECK(empty({3, 0}).numel() == 0);
  CHECK(empty_like(ones({2, 5})).sizes() == Shape{2, 5});
  CHECK(zeros_like(ones({2}, kFloat64)).dtype() == kFloat64);
  CHECK(ones_like(zeros({3}, kInt64)).sum().item<std::int64_t>() == 3);
  CHECK(eye(3).sum().item<double>() == 3.0);
  CHECK(eye(2, 3).toString() == "tensor([[1., 0., 0.],\n        [0., 1., 0.]])");
}

TEST_CASE("arange follows PyTorch's dtype rule") {
  CHECK(arange(6).dtype() == kInt64);
  CHECK(arange(6).toString() == "tensor([0, 1, 2, 3, 4, 5])");
  CHECK(arange(0.0, 1.0, 0.25).dtype() == kFloat32);
  CHECK(arange(0.0, 1.0, 0.25).toString() == "tensor([0.0000, 0.2500, 0.5000, 0.7500])");
  CHECK(arange(1, 10, 3).toString() == "tensor([1, 4, 7])");
  CHECK_THROWS_WITH(arange(0, 5, 0), "step must be nonzero");
}

TEST_CASE("manual_seed makes rand and randn repeatable") {
  manual_seed(42);
  Tensor a = rand({5}), n1 = randn({5});
  manual_seed(42);
  Tensor b = rand({5}), n2 = randn({5});
  CHECK(equal(a, b));
  CHECK(equal(n1, n2));
  CHECK(a.min().item<double>() >= 0.0);
  CHECK(a.max().item<double>() < 1.0);
  manual_seed(1);
  Tensor big = randn({10000});
  CHECK(std::abs(big.mean().item<double>()) < 0.05);
  CHECK(std::abs((big * big).mean().item<double>() - 1.0) < 0.05);
  Tensor r = randint(0, 3, {100});
  CHECK(r.dtype() == kInt64);
  CHECK(r.min().item<std::int64_t>() >= 0);
  CHECK(r.max().item<std::int64_t>() <= 2);
}

TEST_CASE("tensors print like PyTorch") {
  CHECK(zeros({2, 2}).toString() == "tensor([[0., 0.],\n        [0., 0.]])");
  CHECK(tensor({1.5, -2.25}).toString() == "tensor([ 1.5000, -2.2500])");
  CHECK(tensor({1, 2, 3}, kFloat64).toString() == "tensor([1., 2., 3.], dtype=torch.float64)");
  CHECK(scalar_tensor(3.5).toString() == "tensor(3.5000)");
  CHECK(tensor({1e-5, 1.0}).toString() == "tensor([1.0000e-05, 1.0000e+00])");
  CHECK(arange(3).gt(0).toString() == "tensor([False,  True,  True])");
  CHECK(empty({0}).toString() == "tensor([])");
  CHECK(empty({2, 0}).toString() == "tensor([], size=(2, 0))");
  CHECK(arange(8).view({2, 2, 2}).toString() == "tensor([[[0, 1],\n         [2, 3]],\n\n        [[4, 5],\n         [6, 7]]])");
  Tensor x = ones({2}, requires_grad());
  CHECK(x.toString() == "tensor([1., 1.], requires_grad=True)");
  CHECK((x * 2).toString() == "tensor([2., 2.], grad_fn=<MulBackward1>)");
  CHECK(ones({1}, Device("sim")).toString() == "tensor([1.], device='sim:0')");
  // More than 1000 elements: the edges only.
  CHECK(arange(2000).toString() == "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])");
}

TEST_CASE("item and data_ptr check what they are given") {
  CHECK(ones({1, 1}).item<double>() == 1.0);
  CHECK_THROWS_AS(ones({2}).item(), Error);
  CHECK_THROWS_WITH(ones({2}).item(), "a Tensor with 2 elements cannot be converted to Scalar");
  CHECK_THROWS_AS(ones({2}).data_ptr<double>(), TypeError);
  CHECK_THROWS_WITH(ones({2}).data_ptr<double>(), "expected scalar type double but found float");
  CHECK(ones({2}).data_ptr<float>()[1] == 1.0f);
}

TEST_CASE("tensor() checks its shape") {
  CHECK(tensor({1, 2, 3, 4, 5, 6}, {2, 3}).sizes() == Shape{2, 3});
  CHECK_THROWS_WITH(tensor({1, 2, 3}, {2, 2}), "shape '[2, 2]' is invalid for input of size 3");
  CHECK_THROWS_WITH(empty({2, -1}), "Trying to create tensor with negative dimension -1: [2, -1]");
}

TEST_CASE("to(dtype) converts values and to() of the same dtype is the same tensor") {
  Tensor a = tensor({1.7, -2.2, 0});
  CHECK(a.to(kInt64).toString() == "tensor([ 1, -2,  0])");
  CHECK(a.to(kBool).toString() == "tensor([ True,  True, False])");
  CHECK(a.to(kFloat32).is_same(a));
}
