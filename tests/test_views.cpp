// Views share storage; reshape and contiguous copy only when they must (CLAIMS 1, 2, 3, 5, 11).
#include <catch2/catch.hpp>
#include <memlens/runtime.hpp>

using namespace memlens;

namespace {
std::int64_t cpu_allocated() { return memory_allocated(kCPU); }
}  // namespace

TEST_CASE("claim 3: a view shares storage - a[0 0]=5 shows in b") {
  Tensor a = zeros({2, 3});
  Tensor b = a.view({3, 2});
  CHECK(b.storage() == a.storage());
  a.index_put_({0, 0}, 5);
  CHECK(b.index({0, 0}).item<double>() == 5.0);
  a[1][2] = 7;  // rvalue assignment writes through
  CHECK(b.index({2, 1}).item<double>() == 7.0);
  CHECK(a._version() == 2);
  CHECK(b._version() == 2);
}

TEST_CASE("claim 1: view on incompatible strides throws naming sizes and strides - reshape copies") {
  Tensor x = arange(6).view({2, 3});
  Tensor xt = x.transpose(0, 1);
  CHECK_FALSE(xt.is_contiguous());
  CHECK_THROWS_AS(xt.view({6}), ShapeError);
  CHECK_THROWS_WITH(xt.view({6}),
                    "view size is not compatible with input tensor's size and stride (at least one dimension spans "
                    "across two contiguous subspaces). Use .reshape(...) instead. (input sizes [3, 2], strides [1, "
                    "3]; requested view [6])");
  std::int64_t before = cpu_allocated();
  Tensor r = xt.reshape({6});
  CHECK(r.storage() != x.storage());
  CHECK(cpu_allocated() - before == 512);  // 6 int64 rounded to one 512-byte block
  CHECK(r.toString() == "tensor([0, 3, 1, 4, 2, 5])");
  // On a contiguous tensor reshape is a view.
  Tensor v = x.reshape({3, 2});
  CHECK(v.storage() == x.storage());
}

TEST_CASE("claim 2: transpose(0 1) of a 1-D tensor fails on the dimension first") {
  Tensor x = arange(6);
  CHECK_THROWS_AS(x.transpose(0, 1), IndexError);
  CHECK_THROWS_WITH(x.transpose(0, 1), "Dimension out of range (expected to be in range of [-1, 0], but got 1)");
  CHECK_THROWS_WITH(zeros({2, 3}).sum({2}), "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
}

TEST_CASE("claim 5: t() shares storage and contiguous() copies") {
  Tensor a = rand({3, 4});
  Tensor t = a.t();
  CHECK(t.storage() == a.storage());
  CHECK(t.strides() == Shape{1, 4});
  std::int64_t before = cpu_allocated();
  Tensor c = t.contiguous();
  CHECK(c.storage() != a.storage());
  CHECK(c.is_contiguous());
  CHECK(cpu_allocated() - before == 512);
  CHECK(equal(c, t));
  // contiguous() of a contiguous tensor is the tensor itself.
  CHECK(a.contiguous().is_same(a));
}

TEST_CASE("claim 11: which ops share memory") {
  Tensor a = rand({4, 6});
  auto shares = [&](const Tensor& t) { return t.storage() == a.storage(); };
  CHECK(shares(a.view({24})));
  CHECK(shares(a.transpose(0, 1)));
  CHECK(shares(a.permute({1, 0})));
  CHECK(shares(a.reshape({2, 12})));
  CHECK_FALSE(shares(a.t().reshape({24})));
  CHECK_FALSE(shares(a.t().contiguous()));
  CHECK(shares(a.unsqueeze(0).expand({3, 4, 6})));
  CHECK(shares(a.narrow(1, 2, 3)));
  CHECK(shares(a.select(0, 1)));
  CHECK(shares(a.detach()));
  CHECK(shares(a.index({indexing::Slice(1, 3), indexing::None, indexing::Ellipsis})));
}

TEST_CASE("expand and expand_as are stride-0 views that allocate nothing") {
  Tensor y = rand({1});
  Tensor x = rand({1000, 1000});
  std::int64_t before = cpu_allocated();
  Tensor e = y.expand_as(x);
  CHECK(cpu_allocated() == before);
  CHECK(e.sizes() == Shape{1000, 1000});
  CHECK(e.strides() == Shape{0, 0});
  Tensor col = arange(3).view({3, 1}).expand({3, 4});
  CHECK(col.strides() == Shape{1, 0});
  CHECK(col.toString() == "tensor([[0, 0, 0, 0],\n        [1, 1, 1, 1],\n        [2, 2, 2, 2]])");
  CHECK(arange(3).expand({2, -1}).sizes() == Shape{2, 3});
  CHECK_THROWS_WITH(arange(3).expand({2, 4}),
                    "The expanded size of the tensor (4) must match the existing size (3) at non-singleton dimension 1.  "
                    "Target sizes: [2, 4].  Tensor sizes: [3]");
}

TEST_CASE("view shape inference and errors") {
  Tensor x = arange(6);
  CHECK(x.view({-1, 2}).sizes() == Shape{3, 2});
  CHECK_THROWS_AS(x.view({4, 2}), ShapeError);
  CHECK_THROWS_WITH(x.view({4, 2}), "shape '[4, 2]' is invalid for input of size 6");
  CHECK_THROWS_WITH(x.reshape({-1, -1}), "only one dimension can be inferred");
  CHECK_THROWS_WITH(x.reshape({4, -1}), "shape '[4, -1]' is invalid for input of size 6");
}

TEST_CASE("shape ops give PyTorch's shapes and strides") {
  Tensor a = arange(24).view({2, 3, 4});
  CHECK(a.permute({2, 0, 1}).sizes() == Shape{4, 2, 3});
  CHECK(a.permute({2, 0, 1}).strides() == Shape{1, 12, 4});
  CHECK(a.unsqueeze(1).sizes() == Shape{2, 1, 3, 4});
  CHECK(a.unsqueeze(-1).sizes() == Shape{2, 3, 4, 1});
  CHECK(a.unsqueeze(1).squeeze().sizes() == Shape{2, 3, 4});
  CHECK(a.unsqueeze(0).squeeze(0).sizes() == Shape{2, 3, 4});
  CHECK(a.squeeze(1).sizes() == Shape{2, 3, 4});  // size 3: unchanged
  CHECK(a.flatten().sizes() == Shape{24});
  CHECK(a.flatten(1).sizes() == Shape{2, 12});
  CHECK(a.narrow(2, 1, 2).sizes() == Shape{2, 3, 2});
  CHECK(a.narrow(2, 1, 2).storage_offset() == 1);
  CHECK(a.select(1, 2).toString() == "tensor([[ 8,  9, 10, 11],\n        [20, 21, 22, 23]])");
  CHECK(a.slice(2, 0, 4, 2).strides() == Shape{12, 4, 2});
  CHECK(a.slice(2, 0, 4, 2).select(0, 0).select(0, 0).toString() == "tensor([0, 2])");
  CHECK(a.index({1, -1}).toString() == "tensor([20, 21, 22, 23])");
  CHECK(a.index({indexing::Ellipsis, 0}).sizes() == Shape{2, 3});
  CHECK(a.index({indexing::Slice(), indexing::Slice(indexing::None, 2)}).sizes() == Shape{2, 2, 4});
  CHECK(a[1][2][3].item<std::int64_t>() == 23);
  CHECK(eye(3).diagonal().toString() == "tensor([1., 1., 1.])");
  CHECK_THROWS_WITH(a.select(1, 3), "index 3 is out of bounds for dimension 1 with size 3");
  CHECK_THROWS_WITH(a.narrow(0, 1, 2), "start (1) + length (2) exceeds dimension size (2).");
  CHECK_THROWS_WITH(a.index({0, 0, 0, 0}), "too many indices for tensor of dimension 3");
  CHECK_THROWS_WITH(a.t(), "t() expects a tensor with <= 2 dimensions, but self is 3D");
  CHECK_THROWS_WITH(a.permute({0, 0, 1}), "permute(): duplicate dims are not allowed.");
}
