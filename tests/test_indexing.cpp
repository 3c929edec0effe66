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
  CHECK_THROWS_WITH(a.index_select(0, tensor({1})), "index_select(): Expected dtype int64 for index but got float");
}

TEST_CASE("gather picks along a dim, as PyTorch's gather, and refuses what PyTorch refuses") {
  Tensor a = arange(12).view({3, 4});  // [[0 1 2 3] [4 5 6 7] [8 9 10 11]]
  CHECK(a.gather(1, tensor({3, 0, 1, 1, 2, 0}, kInt64).view({3, 2})).toString() ==
        "tensor([[ 3,  0],\n        [ 5,  5],\n        [10,  8]])");
  CHECK(a.gather(0, tensor({2, 0, 1, 2}, kInt64).view({1, 4})).toString() == "tensor([[ 8,  1,  6, 11]])");
  // Non-contiguous input: the transpose's rows are a's columns.
  CHECK(a.t().gather(1, tensor({0, 2}, kInt64).view({2, 1})).toString() == "tensor([[0],\n        [9]])");
  CHECK_THROWS_WITH(a.gather(1, tensor({4}, kInt64).view({1, 1})), "gather(): index 4 is out of bounds for dimension 1 with size 4");
  CHECK_THROWS_WITH(a.gather(1, tensor({-1}, kInt64).view({1, 1})), "gather(): index -1 is out of bounds for dimension 1 with size 4");
  CHECK_THROWS_WITH(a.gather(1, tensor({1}, kInt64)),
                    "gather(): Index tensor must have the same number of dimensions as input tensor (1 vs 2)");
  CHECK_THROWS_WITH(a.gather(1, tensor({1.0}).view({1, 1})), "gather(): Expected dtype int64 for index but got float");
  CHECK_THROWS_AS(a.gather(1, zeros({4, 1}, kInt64)), IndexError);  // 4 rows where a has 3
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
  CHECK_THROWS_AS(a.index_put_({tensor({0}, kInt64)}, 1), IndexError);
}

TEST_CASE("cat joins along a dim") {
  Tensor c = cat({ones({2, 2}), zeros({1, 2})});
  CHECK(c.sizes() == Shape{3, 2});
  CHECK(c.sum().item<double>() == 4.0);
  CHECK(cat({arange(2).view({1, 2}), arange(2).view({1, 2})}, 1).toString() == "tensor([[0, 1, 0, 1]])");
  CHECK_THROWS_AS(cat({ones({2, 2}), ones({2, 3})}), ShapeError);
}
