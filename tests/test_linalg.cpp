// mm, bmm, matmul's rules and einsum (CLAIM 10).
#include <catch2/catch.hpp>
#include <memlens/runtime.hpp>

using namespace memlens;

TEST_CASE("mm matches a hand-computed product - also on transposed operands") {
  Tensor a = tensor({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = tensor({7, 8, 9, 10, 11, 12}, {3, 2});
  CHECK(a.mm(b).toString() == "tensor([[ 58.,  64.],\n        [139., 154.]])");
  CHECK(b.t().mm(a.t()).toString() == "tensor([[ 58., 139.],\n        [ 64., 154.]])");
  // A transposed operand goes to BLAS by flag: the only allocation is the output.
  std::int64_t before = memory_allocated(kCPU);
  Tensor c = b.t().mm(a.t());
  CHECK(memory_allocated(kCPU) - before == 512);
  // A non-BLAS layout (a strided slice) still gives the right answer.
  Tensor wide = arange(12).view({2, 6}).to(kFloat32);
  CHECK(wide.slice(1, 0, 6, 2).mm(b).toString() == "tensor([[ 62.,  68.],\n        [224., 248.]])");
  CHECK(arange(4).view({2, 2}).mm(arange(4).view({2, 2})).toString() == "tensor([[ 2,  3],\n        [ 6, 11]])");
  CHECK(a.to(kFloat64).mm(b.to(kFloat64)).dtype() == kFloat64);
}

TEST_CASE("matmul follows PyTorch's 1-D - 2-D and batched rules") {
  CHECK(matmul(ones({3}), ones({3})).dim() == 0);
  CHECK(matmul(ones({3}), ones({3})).item<double>() == 3.0);
  CHECK(matmul(ones({2, 3}), ones({3})).sizes() == Shape{2});
  CHECK(matmul(ones({3}), ones({3, 4})).sizes() == Shape{4});
  CHECK(matmul(ones({100, 1}), ones({1})).sizes() == Shape{100});  // the seed's X @ w
  CHECK(matmul(ones({5, 2, 3}), ones({3, 4})).sizes() == Shape{5, 2, 4});
  CHECK(matmul(ones({5, 1, 2, 3}), ones({6, 3, 4})).sizes() == Shape{5, 6, 2, 4});
  CHECK(matmul(ones({5, 2, 3}), ones({3})).sizes() == Shape{5, 2});
  CHECK(matmul(ones({3}), ones({5, 3, 4})).sizes() == Shape{5, 4});
  Tensor a = rand({4, 2, 3}), b = rand({4, 3, 5});
  Tensor m = a.matmul(b);
  for (int i = 0; i < 4; ++i) CHECK(allclose(m[i], a[i].mm(b[i]), 1e-5, 1e-6));
  CHECK(allclose(a.bmm(b), m));
}

TEST_CASE("mismatched matmul and wrong dtypes are clear errors") {
  CHECK_THROWS_AS(ones({3, 4}).mm(ones({5, 6})), ShapeError);
  CHECK_THROWS_WITH(ones({3, 4}).mm(ones({5, 6})), "mat1 and mat2 shapes cannot be multiplied (3x4 and 5x6)");
  CHECK_THROWS_WITH(ones({2, 3, 4}).matmul(ones({5, 6})), "mat1 and mat2 shapes cannot be multiplied (3x4 and 5x6)");
  CHECK_THROWS_WITH(ones({3}).matmul(ones({4})),
                    "inconsistent tensor size, expected tensor [3] and src [4] to have the same number of elements, "
                    "but got 3 and 4 elements respectively");
  CHECK_THROWS_AS(ones({2, 2}).mm(arange(4).view({2, 2})), TypeError);
  CHECK_THROWS_WITH(ones({2, 2}).mm(arange(4).view({2, 2})),
                    "expected m1 and m2 to have the same dtype, but got: float != long int");
  CHECK_THROWS_WITH(ones({2}).mm(ones({2, 2})), "self must be a matrix");
  CHECK_THROWS_WITH(ones({2, 2, 2}).bmm(ones({3, 2, 2})),
                    "Expected size for first two dimensions of batch2 tensor to be: [2, 2] but got: [3, 2].");
  CHECK_THROWS_AS(ones({2}, Device("sim")).matmul(ones({2})), DeviceError);
}

TEST_CASE("claim 10: einsum('ij jk->ik') equals mm - with the same memory") {
  Tensor a = rand({64, 32}), b = rand({32, 16});
  std::int64_t before = memory_allocated(kCPU);
  reset_peak_memory_stats(kCPU);
  Tensor e = einsum("ij,jk->ik", {a, b});
  std::int64_t einsum_bytes = memory_allocated(kCPU) - before;
  std::int64_t einsum_peak = max_memory_allocated(kCPU) - before;
  Tensor m = a.mm(b);
  CHECK(allclose(e, m));
  CHECK(einsum_bytes == 4096);  // 64x16 floats: exactly what mm allocates
  CHECK(einsum_peak == 4096);
}

TEST_CASE("einsum handles transposes - traces - batches - outer products and implicit output") {
  Tensor a = rand({3, 4}), sq = rand({4, 4}), v = rand({4}), w = rand({5});
  Tensor x = rand({2, 3, 4}), y = rand({2, 4, 5});
  CHECK(equal(einsum("ij->ji", {a}), a.t()));
  CHECK(allclose(einsum("ii->", {sq}), sq.diagonal().sum()));
  CHECK(allclose(einsum("ii->i", {sq}), sq.diagonal()));
  CHECK(allclose(einsum("bij,bjk->bik", {x, y}), x.bmm(y), 1e-5, 1e-6));
  CHECK(allclose(einsum("i,j->ij", {v, w}), v.unsqueeze(1) * w.unsqueeze(0)));
  CHECK(allclose(einsum("ij,j->i", {a, v}), a.matmul(v), 1e-5, 1e-6));
  CHECK(allclose(einsum("ij->", {a}), a.sum()));
  CHECK(allclose(einsum("ij", {a}), a));
  CHECK(allclose(einsum("ji", {a}), a.t()));
  CHECK(allclose(einsum("ij,jk", {a, sq}), a.mm(sq), 1e-5, 1e-6));
  CHECK(allclose(einsum("i,i->", {v, v}), (v * v).sum()));
  CHECK(allclose(einsum("ij,jk,kl->il", {a, sq, sq}), a.mm(sq).mm(sq), 1e-4, 1e-5));
  CHECK(allclose(einsum("bij->bji", {x}), x.transpose(1, 2)));
  CHECK_THROWS_WITH(einsum("ij,jk->ik", {a}), "einsum(): fewer operands were provided than specified in the equation: ij,jk->ik");
  CHECK_THROWS_AS(einsum("ijk->i", {a}), ShapeError);
  CHECK_THROWS_WITH(einsum("ij->k", {a}), "einsum(): output subscript k does not appear in the equation for any input operand");
}
