// The 16-bit floating types and the small integer types: bit-exact rounding, PyTorch's
// promotion lattice, storage of the right size, ops and gradients through them, and
// autocast's casts and the memory they keep.
#include <catch2/catch.hpp>
#include <cmath>
#include <memlens/runtime.hpp>

using namespace memlens;

TEST_CASE("Half and BFloat16 round to nearest even, with IEEE's edges") {
  CHECK(static_cast<float>(BFloat16(0.1f)) == 0.10009765625f);  // 0x3dcd
  CHECK(BFloat16(0.1f).bits == 0x3dcd);
  CHECK(Half(0.1f).bits == 0x2e66);
  CHECK(static_cast<float>(Half(0.1f)) == 0.0999755859375f);
  CHECK(static_cast<float>(Half(65504.f)) == 65504.f);                            // the largest half
  CHECK(std::isinf(static_cast<float>(Half(65520.f))));                           // rounds up past it
  CHECK(static_cast<float>(Half(std::ldexp(1.f, -24))) == std::ldexp(1.f, -24));  // the smallest subnormal
  CHECK(static_cast<float>(Half(std::ldexp(1.f, -26))) == 0.f);
  CHECK(static_cast<float>(Half(1.f + std::ldexp(1.f, -11))) == 1.f);  // a tie: to even
  CHECK(static_cast<float>(Half(1.f + 3 * std::ldexp(1.f, -11))) == 1.f + std::ldexp(1.f, -9));
  CHECK(static_cast<float>(BFloat16(1.f + std::ldexp(1.f, -8))) == 1.f);
  CHECK(std::isnan(static_cast<float>(BFloat16(std::nanf("")))));
  CHECK(std::isnan(static_cast<float>(Half(std::nanf("")))));
  CHECK(static_cast<float>(Half(-2.5f)) == -2.5f);
}

TEST_CASE("dtypes: sizes, PyTorch's promotion, printing") {
  CHECK(element_size(kBFloat16) == 2);
  CHECK(element_size(kFloat16) == 2);
  CHECK(element_size(kInt32) == 4);
  CHECK(element_size(kUInt8) == 1);
  CHECK(promote_types(kFloat16, kBFloat16) == kFloat32);
  CHECK(promote_types(kBFloat16, kFloat32) == kFloat32);
  CHECK(promote_types(kInt32, kInt64) == kInt64);
  CHECK(promote_types(kUInt8, kInt32) == kInt32);
  CHECK(promote_types(kInt64, kBFloat16) == kBFloat16);
  CHECK(promote_types(kBool, kUInt8) == kUInt8);
  Tensor b = ones({3}, kBFloat16);
  CHECK((b + 0.5).dtype() == kBFloat16);  // a Python float keeps the tensor's float type
  CHECK((b + ones({3})).dtype() == kFloat32);
  CHECK((ones({3}, kInt32) + 2).dtype() == kInt32);
  CHECK((ones({3}, kUInt8) * ones({3}, kInt32)).dtype() == kInt32);
  CHECK((ones({3}, kInt32) / 2).dtype() == kFloat32);
  CHECK(b.toString() == "tensor([1., 1., 1.], dtype=torch.bfloat16)");
  CHECK(arange(3, kInt32).toString() == "tensor([0, 1, 2], dtype=torch.int32)");
  CHECK(tensor({0.1}, kFloat16).item<double>() == 0.0999755859375);
  Device sim("sim");
  std::int64_t before = memory_allocated(sim);
  Tensor big = zeros({1024, 1024}, TensorOptions(sim).dtype(kBFloat16));
  CHECK(memory_allocated(sim) - before == 2 << 20);  // 2 bytes an element
}

TEST_CASE("ops in 16 bits compute in float32 and round once") {
  Tensor one = ones({4}, kBFloat16);
  // 1 + 2^-8 is a tie between 1 and 1 + 2^-7 in bfloat16: even wins.
  CHECK((one + std::ldexp(1.0, -8)).sum().item<double>() == 4);
  CHECK(tensor({1, 2, 3, 4}, kBFloat16).sum().item<double>() == 10);
  CHECK(tensor({1, 2, 3, 4}, kFloat16).sum().dtype() == kFloat16);
  manual_seed(1);
  Tensor a = randn({16, 32}), w = randn({32, 8});
  Tensor exact = a.mm(w), low = a.to(kBFloat16).mm(w.to(kBFloat16));
  CHECK(low.dtype() == kBFloat16);
  // bfloat16 keeps 8 bits: the operands' rounding bounds the error.
  CHECK((low.to(kFloat32) - exact).abs().max().item<double>() < 0.1 * exact.abs().max().item<double>());
  CHECK(equal(tensor({3, 1, 2}, kInt32).argmax(), scalar_tensor(0, kInt64)));
  CHECK(tensor({250, 10}, kUInt8).sum().item<double>() == 260);  // sums of integers widen to int64
  // Gradients flow through a 16-bit tensor and its cast.
  Tensor x = tensor({1, 2, 3}).requires_grad_(true);
  Tensor h = x.to(kFloat16);
  (h * h).sum().backward();
  CHECK(x.grad().dtype() == kFloat32);
  CHECK(equal(x.grad(), tensor({2, 4, 6})));
}

TEST_CASE("autocast: matmul-like ops in 16 bits, softmax and losses in float32, one copy of each weight") {
  manual_seed(2);
  nn::Linear fc(64, 32);
  Tensor x = randn({8, 64});
  {
    AutocastGuard autocast(kBFloat16);
    CHECK(autocast::is_enabled());
    Tensor y = fc(x);
    CHECK(y.dtype() == kBFloat16);
    CHECK(x.matmul(randn({64, 4})).dtype() == kBFloat16);
    CHECK(softmax(y, -1).dtype() == kFloat32);
    CHECK(nn::functional::layer_norm(y, {32}).dtype() == kFloat32);
    CHECK(nn::CrossEntropyLoss()(y, zeros({8}, kInt64)).dtype() == kFloat32);
    CHECK((y + 1).dtype() == kBFloat16);  // other ops run in their inputs' type
    // The weight's bfloat16 copy is made once in the guard, whatever the number of uses.
    Device sim("sim");
    nn::Linear on_sim(256, 256);
    on_sim.to(sim);
    Tensor in = randn({4, 256}).to(sim);
    Tensor first = on_sim(in);
    std::int64_t after_first = memory_allocated(sim);
    Tensor second = on_sim(in);
    // Second use: its output and the input's bfloat16 copy (kept for backward), not another
    // 128 KiB copy of the weight.
    CHECK(memory_allocated(sim) - after_first == 2 * (4 * 256 * 2));
    {
      AutocastGuard off(kBFloat16, false);
      CHECK_FALSE(autocast::is_enabled());
      CHECK(fc(x).dtype() == kFloat32);
    }
    y.sum().backward();
  }
  CHECK(fc.weight.grad().dtype() == kFloat32);  // the master weight gets a float32 gradient
  CHECK(fc(x).dtype() == kFloat32);
  CHECK_THROWS_WITH(AutocastGuard(kInt32), "autocast: the dtype must be bfloat16 or float16, got torch.int32");
}
