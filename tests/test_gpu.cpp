// The CUDA backend on a real GPU: every op family computed on cuda:0 and on the cpu from
// the same inputs must agree (values and gradients), and streams, events, pinned copies
// and the caching allocator on cudaMalloc behave as PyTorch's. Without a usable GPU each
// case says why and ctest counts it skipped (label "gpu").
#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <vector>

#include <memlens/runtime.hpp>
#include <memlens/tensor/nn_functional.hpp>

using namespace memlens;
namespace F = memlens::nn::functional;

namespace {

const Device kGpu("cuda:0");
constexpr std::int64_t MiB = std::int64_t{1} << 20, GiB = std::int64_t{1} << 30;

// Whether the case can run; if not, the reason goes to the output, where ctest's
// SKIP_REGULAR_EXPRESSION finds it.
bool gpu_present() {
  const std::string why = cuda_unavailable_reason();
  if (!why.empty()) WARN("GPU test skipped: " << why);
  return why.empty();
}

using Inputs = std::vector<Tensor>;
using Op = std::function<Tensor(const Inputs&)>;

Inputs on(const Inputs& inputs, const Device& d) {
  Inputs out;
  for (const Tensor& t : inputs) {
    Tensor c = t.detach().to(d);
    if (t.requires_grad()) c.requires_grad_(true);
    out.push_back(c);
  }
  return out;
}

bool close(const Tensor& got, const Tensor& want, double tol) {
  if (got.sizes() != want.sizes()) return false;
  if (!want.is_floating_point()) return equal(got.cpu(), want);
  return allclose(got.cpu().to(kFloat32), want.to(kFloat32), tol, tol);
}

// `op` on the cpu inputs and on copies of them on cuda:0: same dtype, shape and values,
// and for inputs that require grad, the same gradients of sum(out * w) for a fixed w.
void same_on_gpu(const std::string& what, const Inputs& inputs, const Op& op, double tol = 1e-5) {
  INFO(what);
  const Inputs cpu_in = on(inputs, kCPU), gpu_in = on(inputs, kGpu);
  Tensor want = op(cpu_in), got = op(gpu_in);
  REQUIRE(got.device() == kGpu);
  CHECK(got.dtype() == want.dtype());
  CHECK(shape_str(got.sizes()) == shape_str(want.sizes()));
  CHECK(close(got, want, tol));
  if (!want.requires_grad()) return;
  Tensor w = randn(want.sizes());
  (want * w.to(want.dtype())).sum().backward();
  (got * w.to(kGpu).to(got.dtype())).sum().backward();
  for (std::size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].requires_grad()) {
      INFO("gradient of input " << i);
      REQUIRE(gpu_in[i].grad().device() == kGpu);
      CHECK(close(gpu_in[i].grad(), cpu_in[i].grad(), tol * 10));
    }
}

Tensor grad_leaf(Tensor t) { return t.requires_grad_(true); }

}  // namespace

TEST_CASE("elementwise ops on cuda equal the cpu's", "[gpu]") {
  if (!gpu_present()) return;
  manual_seed(1);
  const Tensor x = grad_leaf(randn({64, 33})), row = grad_leaf(randn({33})), t = grad_leaf(randn({33, 64}));
  same_on_gpu("broadcast add", {x, row}, [](const Inputs& i) { return i[0] + i[1]; });
  same_on_gpu("strided mul", {x, t}, [](const Inputs& i) { return i[0] * i[1].t(); });
  same_on_gpu("scalars", {x}, [](const Inputs& i) { return (2 - i[0]) / 3 + i[0].pow(2) * 0.5; });
  same_on_gpu("sub with alpha", {x, row}, [](const Inputs& i) { return i[0].sub(i[1], 2.5); });
  same_on_gpu(
      "pow of tensors", {x, row}, [](const Inputs& i) { return i[0].abs().add(0.1).pow(i[1].abs()); }, 1e-4);
  for (const char* name : {"exp", "log", "sqrt", "relu", "sigmoid", "tanh", "erf", "sin", "cos", "neg", "abs"}) {
    same_on_gpu(
        name, {x},
        [name = std::string(name)](const Inputs& i) {
          const Tensor a = i[0];
          if (name == "exp") return a.exp();
          if (name == "log") return a.abs().add(1e-3).log();
          if (name == "sqrt") return a.abs().add(1e-3).sqrt();
          if (name == "relu") return a.relu();
          if (name == "sigmoid") return a.sigmoid();
          if (name == "tanh") return a.tanh();
          if (name == "erf") return a.erf();
          if (name == "sin") return a.sin();
          if (name == "cos") return a.cos();
          if (name == "neg") return a.neg();
          return a.abs();
        },
        1e-5);
  }
  same_on_gpu("floor ceil round clamp", {x}, [](const Inputs& i) {
    return i[0].mul(3).floor() + i[0].mul(3).ceil() + i[0].mul(3).round() + i[0].clamp(-0.5, 0.5);
  });
  same_on_gpu("maximum minimum", {x, t}, [](const Inputs& i) { return maximum(i[0], i[1].t()) - minimum(i[0], i[1].t()); });
  same_on_gpu("comparisons", {x, row},
              [](const Inputs& i) { return logical_or(logical_and(i[0] > i[1], i[0].ge(-0.5)).logical_not(), i[0] == 0); });
  same_on_gpu("where selects (never multiplies)", {x},
              [](const Inputs& i) { return where(i[0] > 0, i[0].log(), zeros({1}, i[0].device())); });
  same_on_gpu("masked_fill tril triu", {x},
              [](const Inputs& i) { return tril(i[0].masked_fill(i[0] < 0, -1.0), -2) + triu(i[0], 3); });
  // A long dense run takes the vectorised path, also from an element not 16-byte aligned.
  const Tensor long_a = randn({1000003}), long_b = randn({1000003});
  same_on_gpu("dense, long", {long_a, long_b}, [](const Inputs& i) { return i[0] * i[1] + 1; });
  same_on_gpu("dense, misaligned", {long_a, long_b},
              [](const Inputs& i) { return i[0].narrow(0, 1, 999999) + i[1].narrow(0, 3, 999999); });
  same_on_gpu("int64", {arange(-50, 50)}, [](const Inputs& i) { return i[0] * 7 - (i[0] / 3).to(kInt64); });
  same_on_gpu("int32 and uint8", {arange(0, 200).to(kInt32)}, [](const Inputs& i) { return i[0].to(kUInt8) + i[0].to(kUInt8); });
  same_on_gpu(
      "bfloat16 and float16", {x, row},
      [](const Inputs& i) {
        return (i[0].to(kBFloat16) * i[1].to(kBFloat16)).to(kFloat32) + (i[0].to(kFloat16) + 1).to(kFloat32);
      },
      1e-2);
  same_on_gpu("isnan", {x}, [](const Inputs& i) { return i[0].log().isnan(); });
}

TEST_CASE("reductions on cuda equal the cpu's", "[gpu]") {
  if (!gpu_present()) return;
  manual_seed(2);
  const Tensor x = grad_leaf(randn({3, 40, 50})), big = randn({1000, 1000});
  same_on_gpu(
      "sum of all", {x}, [](const Inputs& i) { return i[0].sum(); }, 1e-4);
  same_on_gpu(
      "sum over dims 0 and 2", {x},
      [](const Inputs& i) {
        return i[0].sum({0, 2});
      },
      1e-4);
  same_on_gpu("mean keepdim", {x}, [](const Inputs& i) { return i[0].mean({1}, true); });
  same_on_gpu(
      "sum of a transposed view", {x}, [](const Inputs& i) { return i[0].transpose(1, 2).sum({2}); }, 1e-4);
  same_on_gpu(
      "a million, by rows", {big}, [](const Inputs& i) { return i[0].sum({1}); }, 1e-4);
  same_on_gpu(
      "a million, by columns", {big}, [](const Inputs& i) { return i[0].sum({0}); }, 1e-4);
  same_on_gpu(
      "a million, in all", {big}, [](const Inputs& i) { return i[0].sum(); }, 1e-3);
  same_on_gpu("max min", {x}, [](const Inputs& i) { return i[0].max() - i[0].min(); });
  same_on_gpu("argmax argmin", {big}, [](const Inputs& i) { return i[0].argmax(1) + i[0].argmin(0); });
  same_on_gpu("amax amin", {x}, [](const Inputs& i) { return i[0].amax({0, 2}) + i[0].amin({1}).sum(); });
  same_on_gpu(
      "var std", {x},
      [](const Inputs& i) {
        return i[0].var({1}) + i[0].std({0, 2}, false, true).sum();
      },
      1e-4);
  same_on_gpu(
      "norm logsumexp", {x}, [](const Inputs& i) { return i[0].norm() + i[0].logsumexp({2}).sum(); }, 1e-4);
  same_on_gpu(
      "prod", {x}, [](const Inputs& i) { return i[0].narrow(1, 0, 5).abs().add(0.5).prod(1); }, 1e-4);
  same_on_gpu(
      "cumsum", {x}, [](const Inputs& i) { return i[0].cumsum(1); }, 1e-4);
  same_on_gpu("int64 sum is exact", {arange(100000)}, [](const Inputs& i) { return i[0].sum(); });
  // NaN wins max, as on the cpu.
  same_on_gpu("NaN in max", {tensor({1.0, 2.0, -1.0})}, [](const Inputs& i) { return i[0].log().max(); });
}

TEST_CASE("copies and layout ops on cuda equal the cpu's", "[gpu]") {
  if (!gpu_present()) return;
  manual_seed(3);
  const Tensor x = grad_leaf(randn({4, 5, 6, 7}));
  same_on_gpu("contiguous of a permutation", {x}, [](const Inputs& i) { return i[0].permute({3, 1, 0, 2}).contiguous(); });
  same_on_gpu(
      "float16 copy", {x}, [](const Inputs& i) { return i[0].to(kFloat16).to(kFloat32); }, 1e-3);
  same_on_gpu("cat stack", {x}, [](const Inputs& i) {
    return cat({i[0], i[0].mul(2)}, 1).sum({1}) + stack({i[0], i[0]}, 0).sum({0});
  });
  same_on_gpu("flip roll repeat", {x}, [](const Inputs& i) {
    return i[0].flip({1, 3}) + i[0].roll(2, 2) + i[0].narrow(0, 0, 2).repeat({2, 1, 1, 1});
  });
  const Tensor cpu = randn({300, 200});
  const Tensor round_trip = cpu.to(kGpu).t().contiguous().t().cpu();
  CHECK(equal(round_trip, cpu));
  CHECK(equal(cpu.to(kGpu).clone().cpu(), cpu));
  CHECK(equal(arange(6).view({2, 3}).to(kGpu).t().cpu(), arange(6).view({2, 3}).t()));
}

TEST_CASE("index ops on cuda equal the cpu's", "[gpu]") {
  if (!gpu_present()) return;
  manual_seed(4);
  const Tensor x = grad_leaf(randn({10, 8}));
  const Tensor rows = tensor({3, 0, 9, 3}, kInt64), cols = tensor({1, 7, 0, 1}, kInt64);
  same_on_gpu("index_select", {x, rows}, [](const Inputs& i) { return i[0].index_select(0, i[1]); });
  same_on_gpu("index_select on dim 1", {x, cols}, [](const Inputs& i) { return i[0].index_select(1, i[1]); });
  same_on_gpu("advanced index", {x, rows, cols}, [](const Inputs& i) { return i[0].index({i[1], i[2]}); });
  same_on_gpu("masked_select", {x}, [](const Inputs& i) { return i[0].masked_select(i[0] > 0.3); });
  same_on_gpu("gather", {x, randint(0, 8, {10, 3})}, [](const Inputs& i) { return i[0].gather(1, i[1]); });
  // Scatter's rows are distinct per column, so no two writes race for one element.
  const Tensor rows_14 = cat({full({1, 8}, 1, kInt64), full({1, 8}, 4, kInt64)}, 0);
  same_on_gpu("scatter index_add", {x, rows_14, randn({2, 8})}, [](const Inputs& i) {
    return i[0].scatter(0, i[1], i[2]) + i[0].index_add(0, tensor({2, 5}, TensorOptions(kInt64).device(i[0].device())), i[2]);
  });
  same_on_gpu("index_put_ accumulating repeats", {x, rows, cols}, [](const Inputs& i) {
    Tensor z = zeros({10, 8}, i[0].device());
    z.index_put_({i[1], i[2]}, ones({4}, i[0].device()), true);
    return z;
  });
  same_on_gpu("nonzero", {x}, [](const Inputs& i) { return (i[0] > 0.5).nonzero(); });
  same_on_gpu("embedding", {x, tensor({1, 1, 4}, kInt64)}, [](const Inputs& i) { return F::embedding(i[1], i[0]); });
  const Tensor distinct = randperm(64).to(kFloat32).view({8, 8});  // no ties: a unique order
  same_on_gpu("sort", {distinct}, [](const Inputs& i) { return std::get<0>(i[0].sort(1, true)) + i[0].argsort(0).to(kFloat32); });
  same_on_gpu("topk", {distinct}, [](const Inputs& i) { return std::get<1>(i[0].topk(3, 1)); });
  CHECK_THROWS_WITH(x.to(kGpu).index_select(0, tensor({10}, kInt64).to(kGpu)),
                    "index out of range in self (index 10 for dimension 0 with size 10)");
}

TEST_CASE("random draws on cuda are seedable and distributed as asked", "[gpu]") {
  if (!gpu_present()) return;
  manual_seed(5);
  const Tensor a = rand({100000}, kGpu);
  manual_seed(5);
  const Tensor b = rand({100000}, kGpu);
  CHECK(equal(a.cpu(), b.cpu()));
  const Tensor c = rand({100000}, kGpu);
  CHECK_FALSE(equal(a.cpu(), c.cpu()));  // the offset moved on
  CHECK(a.mean().item<double>() == Approx(0.5).margin(0.01));
  CHECK(a.min().item<double>() >= 0.0);
  CHECK(a.max().item<double>() < 1.0);
  const Tensor n = randn({200000}, kGpu);
  CHECK(n.mean().item<double>() == Approx(0.0).margin(0.01));
  CHECK(n.std({0}).item<double>() == Approx(1.0).margin(0.01));
  const Tensor r = randint(3, 9, {10000}, TensorOptions(kInt64).device(kGpu));
  CHECK(r.min().item<std::int64_t>() == 3);
  CHECK(r.max().item<std::int64_t>() == 8);
  CHECK(equal(std::get<0>(randperm(1000, TensorOptions(kInt64).device(kGpu)).sort()).cpu(), arange(1000)));
  Tensor coin = empty({100000}, kGpu);
  coin.bernoulli_(0.25);
  CHECK(coin.mean().item<double>() == Approx(0.25).margin(0.01));
  // The generator state carries the GPU's offset: restoring it repeats a dropout mask.
  const RngState saved = get_rng_state();
  const Tensor d1 = F::dropout(ones({1000}, kGpu), 0.5);
  set_rng_state(saved);
  CHECK(equal(F::dropout(ones({1000}, kGpu), 0.5).cpu(), d1.cpu()));
}

TEST_CASE("matmul, bmm and einsum on cuda go through cuBLAS and equal the cpu's", "[gpu]") {
  if (!gpu_present()) return;
  manual_seed(6);
  const Tensor a = grad_leaf(randn({64, 48})), b = grad_leaf(randn({48, 32}));
  same_on_gpu(
      "mm", {a, b}, [](const Inputs& i) { return i[0].mm(i[1]); }, 1e-4);
  same_on_gpu(
      "mm of transposed operands", {a, b}, [](const Inputs& i) { return i[1].t().mm(i[0].t()); }, 1e-4);
  const Tensor q = grad_leaf(randn({2, 3, 16, 8})), k = grad_leaf(randn({2, 3, 8, 16}));
  same_on_gpu(
      "batched matmul", {q, k}, [](const Inputs& i) { return i[0].matmul(i[1]); }, 1e-4);
  same_on_gpu(
      "bmm", {q, k}, [](const Inputs& i) { return i[0].flatten(0, 1).bmm(i[1].flatten(0, 1)); }, 1e-4);
  same_on_gpu(
      "broadcast matmul", {q, b.narrow(0, 0, 8)}, [](const Inputs& i) { return i[0].matmul(i[1]); }, 1e-4);
  same_on_gpu(
      "einsum", {q, k},
      [](const Inputs& i) {
        return einsum("bhik,bhkj->bhij", {i[0], i[1]});
      },
      1e-4);
  same_on_gpu(
      "mv dot addmm baddbmm", {a, b},
      [](const Inputs& i) {
        const Tensor v = i[1].select(1, 0);
        return addmm(i[0].narrow(1, 0, 32), i[0], i[1], 0.5, 2).sum() + i[0].mv(v).dot(i[0].mv(v)) +
               baddbmm(i[0].narrow(1, 0, 32).unsqueeze(0), i[0].unsqueeze(0), i[1].unsqueeze(0)).sum();
      },
      1e-3);
  same_on_gpu("int64 mm", {arange(12).view({3, 4}), arange(8).view({4, 2})}, [](const Inputs& i) { return i[0].mm(i[1]); });
  same_on_gpu(
      "bfloat16 mm", {a, b}, [](const Inputs& i) { return i[0].to(kBFloat16).mm(i[1].to(kBFloat16)); }, 5e-2);
}

TEST_CASE("softmax, log_softmax and the losses on cuda equal the cpu's", "[gpu]") {
  if (!gpu_present()) return;
  manual_seed(7);
  const Tensor logits = grad_leaf(randn({32, 10})), target = randint(0, 10, {32});
  same_on_gpu("softmax", {logits}, [](const Inputs& i) { return softmax(i[0], 1); });
  same_on_gpu("log_softmax", {logits}, [](const Inputs& i) { return log_softmax(i[0], 0); });
  same_on_gpu("cross entropy", {logits, target}, [](const Inputs& i) { return nn::CrossEntropyLoss()(i[0], i[1]); });
  same_on_gpu("nll", {logits, target}, [](const Inputs& i) { return nn::NLLLoss()(log_softmax(i[0], 1), i[1]); });
  same_on_gpu("mse", {logits, randn({32, 10})}, [](const Inputs& i) { return nn::MSELoss()(i[0], i[1]); });
  same_on_gpu("bce with logits", {logits, rand({32, 10})}, [](const Inputs& i) { return nn::BCEWithLogitsLoss()(i[0], i[1]); });
}

TEST_CASE("nn layers on cuda equal the cpu's, forward and backward", "[gpu]") {
  if (!gpu_present()) return;
  manual_seed(8);
  const Tensor img = grad_leaf(randn({2, 3, 12, 12})), w = grad_leaf(randn({4, 3, 3, 3})), bias = grad_leaf(randn({4}));
  same_on_gpu(
      "conv2d", {img, w, bias}, [](const Inputs& i) { return F::conv2d(i[0], i[1], i[2], 2, 1); }, 1e-4);
  same_on_gpu("max_pool2d", {img}, [](const Inputs& i) { return F::max_pool2d(i[0], 3, 2, 1); });
  same_on_gpu("avg_pool2d", {img}, [](const Inputs& i) { return F::avg_pool2d(i[0], 2); });
  // The options' geometry in the kernels: dilation, groups, 'same' padding, partial windows.
  const Tensor w2 = grad_leaf(randn({6, 1, 2, 3}));
  same_on_gpu(
      "conv2d same dilated grouped", {img, w2}, [](const Inputs& i) { return F::conv2d(i[0], i[1], Tensor(), 1, "same", 2, 3); },
      1e-4);
  same_on_gpu("max_pool2d ceil_mode", {img}, [](const Inputs& i) { return F::max_pool2d(i[0], 3, 2, 1, true); });
  same_on_gpu("avg_pool2d ceil_mode without padding counted", {img},
              [](const Inputs& i) { return F::avg_pool2d(i[0], 3, 2, 1, true, false); });
  same_on_gpu(
      "batch_norm", {img, ones({3}), zeros({3})},
      [](const Inputs& i) { return F::batch_norm(i[0], zeros({3}, i[0].device()), ones({3}, i[0].device()), i[1], i[2]); }, 1e-4);
  const Tensor seq = grad_leaf(randn({2, 5, 16}));
  same_on_gpu(
      "layer_norm gelu silu", {seq}, [](const Inputs& i) { return F::silu(F::gelu(F::layer_norm(i[0], {16}))); }, 1e-4);
  same_on_gpu(
      "causal attention", {seq, seq.mul(0.5).detach().requires_grad_(true)},
      [](const Inputs& i) {
        const Tensor q = i[0].view({2, 5, 2, 8}).transpose(1, 2), kv = i[1].view({2, 5, 2, 8}).transpose(1, 2);
        return F::scaled_dot_product_attention(q, kv, kv, Tensor(), 0, true);
      },
      1e-4);
}

TEST_CASE("a training step on cuda gives the cpu's loss and parameters", "[gpu]") {
  if (!gpu_present()) return;
  manual_seed(9);
  const Tensor x = randn({256, 784}), y = randint(0, 10, {256});
  auto train = [&](const Device& d) {
    manual_seed(10);
    nn::Sequential model{std::make_shared<nn::Linear>(784, 256), std::make_shared<nn::ReLU>(),
                         std::make_shared<nn::Linear>(256, 10)};
    model.to(d);
    optim::SGD opt(model.parameters(), 0.1);
    double loss = 0;
    for (int step = 0; step < 3; ++step) {
      opt.zero_grad();
      Tensor l = nn::CrossEntropyLoss()(model(x.to(d)), y.to(d));
      l.backward();
      opt.step();
      loss = l.item<double>();
    }
    return std::make_pair(loss, model.parameters()[0].detach().cpu());
  };
  const auto [cpu_loss, cpu_w] = train(kCPU);
  const auto [gpu_loss, gpu_w] = train(kGpu);
  CHECK(gpu_loss == Approx(cpu_loss).epsilon(1e-4));
  CHECK(allclose(gpu_w, cpu_w, 1e-4, 1e-5));
}

TEST_CASE("cuBLAS works in the caching allocator's memory: one workspace per stream, kept", "[gpu]") {
  if (!gpu_present()) return;
  const StreamId fresh = new_stream();  // no GEMM has run on it yet, on this thread
  StreamGuard guard(fresh);
  const Tensor a = rand({256, 256}, kGpu);
  const std::int64_t before = memory_allocated(kGpu);
  Tensor c = a.mm(a);
  const std::int64_t workspace = memory_allocated(kGpu) - before - c.numel() * 4;
  // PyTorch's sizes: 32 MiB on Hopper and later, 8 MiB + 128 KiB before.
  CHECK((workspace == 32 * MiB || workspace == 8 * MiB + 128 * 1024));
  const std::int64_t after_first = memory_allocated(kGpu);
  Tensor d = a.mm(a);
  CHECK(memory_allocated(kGpu) - after_first == d.numel() * 4);  // the same workspace again
  CHECK(allclose(d.cpu(), a.cpu().mm(a.cpu()), 1e-3, 1e-3));
  synchronize(fresh);
}

TEST_CASE("streams, a stream guard and events order GPU work", "[gpu]") {
  if (!gpu_present()) return;
  const StreamId side = new_stream();
  CHECK(side != kDefaultStream);
  CHECK(new_stream() != side);
  const Tensor x = rand({4096, 4096}, kGpu);
  Tensor y;
  DeviceEvent done;
  CHECK(done.query());  // never recorded: complete, as PyTorch's
  {
    DeviceEvent ready;
    ready.record();  // x is written on the default stream
    StreamGuard guard(side);
    CHECK(current_stream() == side);
    ready.wait(side);
    y = x.matmul(x);
    done.record();
  }
  CHECK(current_stream() == kDefaultStream);
  done.synchronize();
  CHECK(done.query());
  CHECK(allclose(y.narrow(0, 0, 2).cpu(), x.narrow(0, 0, 2).matmul(x).cpu(), 1e-3, 1e-3));
  synchronize(side);
}

TEST_CASE("record_stream keeps a block from reuse until the other stream's work is done", "[gpu]") {
  if (!gpu_present()) return;
  const StreamId side = new_stream();
  constexpr std::int64_t kFloats = 3 << 20;  // 12 MiB: a segment of exactly its size
  void* first = nullptr;
  {
    Tensor buf = empty({kFloats}, kGpu);  // allocated on the default stream
    first = buf.raw_data();
    StreamGuard guard(side);
    Tensor m = rand({4096, 4096}, kGpu);
    for (int i = 0; i < 10; ++i) m = m.matmul(m).div(4096);  // tens of ms queued on the side stream
    buf.record_stream(side);
  }
  // buf is freed while the side stream still runs: its block waits for that work...
  Tensor again = empty({kFloats}, kGpu);
  CHECK(again.raw_data() != first);
  synchronize(side);
  // ...and comes back to the pool once it is done.
  Tensor after = empty({kFloats}, kGpu);
  CHECK(after.raw_data() == first);
}

TEST_CASE("pinned memory makes non_blocking copies asynchronous and correct", "[gpu]") {
  if (!gpu_present()) return;
  const Tensor host = arange(1 << 22).to(kFloat32);  // 16 MiB
  const Tensor pinned = host.pin_memory();
  CHECK(pinned.is_pinned());
  const Tensor d = pinned.to(kGpu, /*non_blocking=*/true);
  CHECK(d.device() == kGpu);
  const Tensor back = (d * 2).to(kCPU, /*non_blocking=*/true);
  CHECK(back.is_pinned());  // a non_blocking copy to the host lands in pinned memory
  synchronize(kDefaultStream);
  CHECK(equal(back, host * 2));
  CHECK(equal(pinned.to(kGpu).cpu(), host));  // and blocking copies still work from pinned memory
}

TEST_CASE("the caching allocator on cudaMalloc: rounding, caching, empty_cache", "[gpu]") {
  if (!gpu_present()) return;
  empty_cache(kGpu);
  const std::int64_t base = memory_allocated(kGpu), reserved = memory_reserved(kGpu);
  {
    Tensor a = empty({250}, kGpu);  // 1000 B: a 1024-byte block of a 2 MiB segment
    Tensor b = empty({250}, kGpu);
    CHECK(memory_allocated(kGpu) - base == 2048);
    CHECK(memory_reserved(kGpu) - reserved == 2 * MiB);
    CHECK(static_cast<char*>(b.raw_data()) - static_cast<char*>(a.raw_data()) == 1024);
    Tensor large = empty({1 << 20}, kGpu);  // 4 MiB: a 20 MiB segment
    CHECK(memory_reserved(kGpu) - reserved == 22 * MiB);
  }
  CHECK(memory_allocated(kGpu) == base);
  CHECK(memory_reserved(kGpu) - reserved == 22 * MiB);  // cached, not returned
  empty_cache(kGpu);
  CHECK(memory_reserved(kGpu) == reserved);
  CHECK(memory_stats(kGpu)["segment.all.freed"] >= 2);
}

TEST_CASE("an OOM on cuda frees the cache and retries, then fails with PyTorch's fields", "[gpu][oom]") {
  if (!gpu_present()) return;
  empty_cache(kGpu);
  // Fill the GPU with 4 GiB blocks, then free them into the cache.
  {
    std::vector<Tensor> blocks;
    try {
      for (int i = 0; i < 1024; ++i) blocks.push_back(empty({std::int64_t{1} << 30}, kGpu));
    } catch (const OutOfMemoryError&) {
    }
    REQUIRE(blocks.size() >= 2);
  }
  CHECK(memory_reserved(kGpu) >= 8 * GiB);
  const std::int64_t retries = memory_stats(kGpu)["num_alloc_retries"];
  // 6 GiB fits no cached 4 GiB segment and the driver has no room: the cache is freed and
  // the request retried.
  Tensor big = empty({std::int64_t{3} << 29}, kGpu);
  CHECK(memory_stats(kGpu)["num_alloc_retries"] == retries + 1);
  CHECK(memory_reserved(kGpu) < 8 * GiB);
  big = Tensor();
  try {
    Tensor impossible = empty({std::int64_t{1} << 40}, kGpu);  // 4 TiB
    FAIL("4 TiB was allocated");
  } catch (const OutOfMemoryError& e) {
    const std::string msg = e.what();
    CHECK(msg.rfind("cuda:0 out of memory. Tried to allocate 4.00 TiB. Device has a total capacity of ", 0) == 0);
    CHECK(msg.find(" is free. Of the allocated memory ") != std::string::npos);
    CHECK(msg.find("is reserved but unallocated") != std::string::npos);
  }
  Tensor fine = ones({1000}, kGpu);  // the allocator still works
  CHECK(fine.sum().item<double>() == 1000);
  empty_cache(kGpu);
}
