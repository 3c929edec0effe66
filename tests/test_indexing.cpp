// index_select, masked_select, index_put_ and assignment through views.
#include <catch2/catch.hpp>
#include <memlens/runtime.hpp>

using namespace memlens;
using namespace memlens::indexing;

TEST_CASE("index_select copies the chosen rows or columns") {
  Tensor a = arange(12).view({3, 4});
  Tensor rows = a.index_select(0, tensor({2, 0}, kInt64));
  CHECK(rows.toString() == "tensor([[ 8,  9, 10, 11],\n        [ 0,  1,  2,  3]])");
  CHECK(rows.storage() != a.storage());
  CHECK_THROWS_WITH(a.index_select(1, tensor({-1}, kInt64)), "index out of range in self (index -1 for dimension 1 with size 4)");
  CHECK(a[tensor({1}, kInt64)].sizes() == Shape{1, 4});
  CHECK_THROWS_AS(a.index_select(0, tensor({3}, kInt64)), IndexError);
  CHECK_THROWS_WITH(a.index_select(0, tensor({3}, kInt64)), "index out of range in self (index 3 for dimension 0 with size 3)");
  CHECK_THROWS_AS(a.index_select(0, tensor({1})), TypeError);
  CHECK_THROWS_WITH(a.index_select(0, tensor({1})), "index_select(): Expected dtype int32 or int64 for index but got float");
}

TEST_CASE("gather picks along a dim, as PyTorch's gather, and refuses what PyTorch refuses") {
  Tensor a = arange(12).view({3, 4});  // [[0 1 2 3] [4 5 6 7] [8 9 10 11]]
  CHECK(a.gather(1, tensor({3, 0, 1, 1, 2, 0}, kInt64).view({3, 2})).toString() ==
        "tensor([[ 3,  0],\n        [ 5,  5],\n        [10,  8]])");
  CHECK(a.gather(0, tensor({2, 0, 1, 2}, kInt64).view({1, 4})).toString() == "tensor([[ 8,  1,  6, 11]])");
  // Non-contiguous input: the transpose's rows are a's columns.
  CHECK(a.t().gather(1, tensor({0, 2}, kInt64).view({2, 1})).toString() == "tensor([[0],\n        [9]])");
  CHECK_THROWS_WITH(a.gather(1, tensor({4}, kInt64).view({1, 1})),
                    "gather(): index 4 is out of bounds for dimension 1 with size 4");
  CHECK_THROWS_WITH(a.gather(1, tensor({-1}, kInt64).view({1, 1})),
                    "gather(): index -1 is out of bounds for dimension 1 with size 4");
  CHECK_THROWS_WITH(a.gather(1, tensor({1}, kInt64)),
                    "gather(): Index tensor must have the same number of dimensions as input tensor (1 vs 2)");
  CHECK_THROWS_WITH(a.gather(1, tensor({1.0}).view({1, 1})), "gather(): Expected dtype int64 for index but got float");
  // Out of range, or of another size: RuntimeError in PyTorch (memlens::Error), not IndexError.
  auto kind = [](auto&& f) -> std::string {
    try {
      f();
    } catch (const IndexError&) {
      return "IndexError";
    } catch (const Error&) {
      return "Error";
    }
    return "none";
  };
  CHECK(kind([&] { a.gather(1, zeros({4, 1}, kInt64)); }) == "Error");  // 4 rows where a has 3
  CHECK(kind([&] { a.gather(1, tensor({4}, kInt64).view({1, 1})); }) == "Error");
  CHECK(kind([&] { a.clone().scatter(1, tensor({4}, kInt64).view({1, 1}), zeros({1, 1}, a.dtype())); }) == "Error");
  CHECK(kind([&] { a.topk(5, 1); }) == "Error");
}

TEST_CASE("masked_select returns the selected elements as 1-D") {
  Tensor a = arange(6).view({2, 3});
  CHECK(a.masked_select(a > 2).toString() == "tensor([3, 4, 5])");
  CHECK(a[a.gt(3)].toString() == "tensor([4, 5])");
  // The mask broadcasts.
  CHECK(a.masked_select(tensor({1, 0, 1}).to(kBool)).toString() == "tensor([0, 2, 3, 5])");
  CHECK_THROWS_AS(a.masked_select(ones({2, 3})), TypeError);
  CHECK_THROWS_WITH(a.masked_select(ones({2, 3})), "masked_select: expected BoolTensor for mask, got float");
}

TEST_CASE("index_put_ and assignment write through to the base") {
  Tensor a = zeros({3, 3});
  a.index_put_({1, Slice()}, 4);
  CHECK(a.sum().item<double>() == 12.0);
  a.index_put_({Slice(), 0}, tensor({1, 2, 3}));
  CHECK(a.index({Slice(), 0}).toString() == "tensor([1., 2., 3.])");
  a[2][2] = 9;
  CHECK(a.index({2, 2}).item<double>() == 9.0);
  a[0] = tensor({5, 5, 5});
  CHECK(a[0].toString() == "tensor([5., 5., 5.])");
  a.select(1, 1).fill_(-1);
  CHECK(a.index({Slice(), 1}).toString() == "tensor([-1., -1., -1.])");
  a.index_put_({tensor({0}, kInt64)}, 1);  // a tensor index: row 0
  CHECK(a[0].toString() == "tensor([1., 1., 1.])");
  CHECK_THROWS_AS(a.index_put_({tensor({3}, kInt64)}, 1), IndexError);
}

TEST_CASE("cat joins along a dim") {
  Tensor c = cat({ones({2, 2}), zeros({1, 2})});
  CHECK(c.sizes() == Shape{3, 2});
  CHECK(c.sum().item<double>() == 4.0);
  CHECK(cat({arange(2).view({1, 2}), arange(2).view({1, 2})}, 1).toString() == "tensor([[0, 1, 0, 1]])");
  CHECK_THROWS_AS(cat({ones({2, 2}), ones({2, 3})}), ShapeError);
}

// Expected values are what PyTorch 1.13 (python3-torch, CPU) prints for the same
// expressions, typed in.
TEST_CASE("several index tensors index together, laid out as PyTorch lays them out") {
  Tensor a = arange(12).reshape({3, 4}).to(kFloat32);
  Tensor b = arange(24).reshape({2, 3, 4});
  auto L = [](std::initializer_list<double> v) { return tensor(v, kInt64); };
  CHECK(a.index({L({0, 1}), L({2, 0})}).toString() == "tensor([2., 4.])");
  // Adjacent index dims stay where they were ...
  CHECK(b.index({Slice(), L({0, 2}), L({1, 3})}).toString() == "tensor([[ 1, 11],\n        [13, 23]])");
  // ... separated ones go first; negatives count from the end.
  CHECK(b.index({L({1, 0}), Slice(), L({-1, 0})}).toString() == "tensor([[15, 19, 23],\n        [ 0,  4,  8]])");
  // Index tensors broadcast together: [1], [2, 1] and [2] make [2, 2].
  CHECK(b.index({L({1}), L({0, 2}).view({2, 1}), L({1, 3})}).toString() == "tensor([[13, 15],\n        [21, 23]])");
  // A mask over some dims stands for its true positions.
  Tensor m = tensor({1, 0, 1, 1, 0, 0, 1, 0, 1, 0, 0, 1}, kBool).view({3, 4});
  CHECK(b.index({1, m}).toString() == "tensor([12, 14, 15, 18, 20, 23])");
  CHECK(b.index({Slice(), tensor({1, 0, 1}, kBool)}).sizes() == Shape{2, 2, 4});

  CHECK_THROWS_WITH(a.index({L({0, 5}), L({0, 0})}), "index 5 is out of bounds for dimension 0 with size 3");
  CHECK_THROWS_WITH(a.index({L({0, 1, 2}), L({0, 0})}),
                    "shape mismatch: indexing tensors could not be broadcast together with shapes [3], [2]");
  CHECK_THROWS_WITH(a.index({tensor({1, 0}, kBool)}),
                    "The shape of the mask [2] at index 0 does not match the shape of the indexed tensor [3, 4] at index 0");
}

TEST_CASE("index_put_ with tensor indices writes or accumulates, with gradients for both sides") {
  auto L = [](std::initializer_list<double> v) { return tensor(v, kInt64); };
  Tensor x = zeros({3, 4});
  x.index_put_({L({0, 2, 0}), L({1, 3, 1})}, tensor({1, 2, 3}), true);  // (0, 1) twice: 1 + 3
  CHECK(x.toString() == "tensor([[0., 4., 0., 0.],\n        [0., 0., 0., 0.],\n        [0., 0., 0., 2.]])");
  x.index_put_({L({1})}, tensor({7, 8, 9, 10}));
  CHECK(x.toString() == "tensor([[ 0.,  4.,  0.,  0.],\n        [ 7.,  8.,  9., 10.],\n        [ 0.,  0.,  0.,  2.]])");
  x.index_put_({Slice(), L({0})}, -1.0);
  CHECK(x.select(1, 0).toString() == "tensor([-1., -1., -1.])");
  CHECK_THROWS_WITH(x.index_put_({L({0, 1}), L({0, 0})}, tensor({1, 2, 3})),
                    "shape mismatch: value tensor of shape [3] cannot be broadcast to indexing result of shape [2]");

  Tensor w = tensor({1, 2, 3, 4, 5, 6}, requires_grad());
  Tensor v = tensor({10, 20}, requires_grad());
  Tensor y = w.view({2, 3}) * 1;
  y.index_put_({L({0, 1}), L({2, 0})}, v * v);
  CHECK(y.grad_fn()->name() == "IndexPutBackward0");
  (y * y).sum().backward();
  CHECK(y.toString() == "tensor([[  1.,   2., 100.],\n        [400.,   5.,   6.]], grad_fn=<IndexPutBackward0>)");
  CHECK(w.grad().toString() == "tensor([ 2.,  4.,  0.,  0., 10., 12.])");  // overwritten: none
  CHECK(v.grad().toString() == "tensor([ 4000., 32000.])");                // d(v^2)^2 = 4 v^3

  Tensor w2 = tensor({1, 2, 3, 4, 5, 6}, requires_grad());
  Tensor g = w2.view({2, 3}).index({L({0, 1, 0}), L({2, 0, 2})});
  (g * g).sum().backward();
  CHECK(w2.grad().toString() == "tensor([ 0.,  0., 12.,  8.,  0.,  0.])");  // (0, 2) read twice: 2*3 + 2*3
}
