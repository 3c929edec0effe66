// The CUDA kernels' index math (runtime/src/cuda/strided_loop.hpp) is host-and-device
// code: checked here against offsets worked out by hand, where no GPU is.
#include <catch2/catch.hpp>

#include "cuda/strided_loop.hpp"

using namespace memlens;
using memlens::cuda::Strided;

namespace {

Strided geometry(std::initializer_list<std::int64_t> sizes, std::initializer_list<std::int64_t> strides) {
  Strided t;
  for (std::int64_t s : sizes) t.sizes[t.ndim++] = s;
  int d = 0;
  for (std::int64_t s : strides) t.strides[d++] = s;
  return t;
}

}  // namespace

TEST_CASE("a strided geometry finds the row-major element's offset") {
  const Strided t = geometry({2, 3}, {1, 2});  // a transposed 3x2
  CHECK(t.numel() == 6);
  // Elements (0,0) (0,1) (0,2) (1,0) (1,1) (1,2) sit at 0 2 4 1 3 5.
  const std::int64_t want[] = {0, 2, 4, 1, 3, 5};
  for (int i = 0; i < 6; ++i) CHECK(t.offset_of(i) == want[i]);
  CHECK(geometry({}, {}).offset_of(0) == 0);  // a 0-dim tensor is one element at 0
}

TEST_CASE("a loop merges dims that are dense in every operand and drops size-1 dims") {
  const Strided out = geometry({4, 1, 5, 6}, {30, 30, 6, 1});  // dense
  const Strided same = geometry({4, 1, 5, 6}, {30, 1, 6, 1});  // dense, odd stride on the size-1 dim
  {
    const Strided* ops[2] = {&out, &same};
    const auto loop = cuda::make_loop(ops);
    CHECK(loop.ndim == 1);
    CHECK(loop.sizes[0] == 120);
    CHECK(loop.contiguous);
    CHECK(loop.numel == 120);
  }
  // A row vector broadcast along dim 0 (stride 0) keeps two dims; the inner two merge.
  const Strided bias = geometry({4, 1, 5, 6}, {0, 0, 6, 1});
  const Strided* ops[2] = {&out, &bias};
  const auto loop = cuda::make_loop(ops);
  CHECK_FALSE(loop.contiguous);
  REQUIRE(loop.ndim == 2);
  CHECK(loop.sizes[0] == 4);
  CHECK(loop.sizes[1] == 30);
  std::int64_t off[2];
  loop.offsets(37, off);  // row 1, column 7
  CHECK(off[0] == 37);
  CHECK(off[1] == 7);
}

TEST_CASE("a loop over a transposed operand walks it by its strides") {
  const Strided out = geometry({3, 4}, {4, 1});
  const Strided t = geometry({3, 4}, {1, 3});  // a 4x3 transposed
  const Strided* ops[2] = {&out, &t};
  const auto loop = cuda::make_loop(ops);
  REQUIRE(loop.ndim == 2);
  for (std::int64_t i = 0; i < 12; ++i) {
    std::int64_t off[2];
    loop.offsets(i, off);
    CHECK(off[0] == i);
    CHECK(off[1] == (i % 4) * 3 + i / 4);
  }
}

TEST_CASE("coalesced and without_dim give a reduction's kept and folded geometries") {
  const Strided t = geometry({2, 3, 4}, {12, 4, 1});
  const Strided rows = cuda::without_dim(t, 1);  // the lines along dim 1
  CHECK(rows.ndim == 2);
  CHECK(rows.sizes[0] == 2);
  CHECK(rows.sizes[1] == 4);
  CHECK(rows.strides[0] == 12);
  CHECK(rows.strides[1] == 1);
  const Strided dense = cuda::coalesced(t);
  CHECK(dense.ndim == 1);
  CHECK(dense.sizes[0] == 24);
  CHECK(dense.strides[0] == 1);
  CHECK(cuda::coalesced(rows).ndim == 2);  // stride 12 after size 2 then 1 after 4: not mergeable
  CHECK_THROWS_WITH(cuda::check_dims(17), "a tensor of 17 dims is more than the 16 a GPU kernel takes");
}
