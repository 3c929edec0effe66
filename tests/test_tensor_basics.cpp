#include <catch2/catch.hpp>
#include <memlens/runtime.hpp>

using namespace memlens;

TEST_CASE("zeros prints like PyTorch") {
  CHECK(zeros({2, 2}).toString() == "tensor([[0., 0.],\n        [0., 0.]])");
}
