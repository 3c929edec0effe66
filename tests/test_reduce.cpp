// sum, mean, max, min, argmax over all or given dims, with keepdim.
#include <catch2/catch.hpp>
#include <memlens/runtime.hpp>

using namespace memlens;

TEST_CASE("sum and mean over all and over dims") {
  Tensor a = arange(12).view({3, 4}).to(kFloat32);
  CHECK(a.sum().item<double>() == 66.0);
  CHECK(a.sum().dim() == 0);
  CHECK(a.sum({0}).toString() == "tensor([12., 15., 18., 21.])");
  CHECK(a.sum({1}).toString() == "tensor([ 6., 22., 38.])");
  CHECK(a.sum({1}, true).sizes() == Shape{3, 1});
  CHECK(a.sum({0, 1}).item<double>() == 66.0);
  CHECK(a.sum({-1}).sizes() == Shape{3});
  CHECK(a.mean().item<double>() == 5.5);
  CHECK(a.mean({0}).toString() == "tensor([4., 5., 6., 7.])");
  CHECK(a.mean({1}, true).toString() == "tensor([[1.5000],\n        [5.5000],\n        [9.5000]])");
  CHECK(a.t().sum({0}).toString() == "tensor([ 6., 22., 38.])");  // strided input
  CHECK(arange(5).sum().dtype() == kInt64);
  CHECK((arange(5) > 1).sum().item<std::int64_t>() == 3);
  CHECK_THROWS_AS(arange(5).mean(), TypeError);
  CHECK_THROWS_WITH(a.sum({0, 0}), "dim 0 appears multiple times in the list of dims");
}

TEST_CASE("sum accumulates float32 in double") {
  Tensor x = full({10000000}, 0.1);
  CHECK(std::abs(x.sum().item<double>() - 1000000.0) < 1.0);
}

TEST_CASE("max - min - argmax - argmin") {
  Tensor a = tensor({3, 9, 1, 4, 7, 8}, {2, 3});
  CHECK(a.max().item<double>() == 9.0);
  CHECK(a.min().item<double>() == 1.0);
  CHECK(a.argmax().item<std::int64_t>() == 1);
  CHECK(a.argmin().item<std::int64_t>() == 2);
  auto [v, i] = a.max(1);
  CHECK(v.toString() == "tensor([9., 8.])");
  CHECK(i.toString() == "tensor([1, 2])");
  auto [v0, i0] = a.min(0, true);
  CHECK(v0.toString() == "tensor([[3., 7., 1.]])");
  CHECK(i0.toString() == "tensor([[0, 1, 0]])");
  CHECK(a.argmax(0).toString() == "tensor([1, 0, 1])");
  CHECK(a.argmax(1, true).sizes() == Shape{2, 1});
  CHECK_THROWS_WITH(empty({0}).max(), "max(): Expected reduction dim to be specified for input.numel() == 0.");
}
