// Factory functions and the seedable generator behind rand/randn/randint.
#include <cmath>
#include <cstring>
#include <mutex>
#include <random>
#include <sstream>

#include "tensor_internal.hpp"

namespace memlens {

using namespace detail;

namespace {

std::mutex rng_mu;
std::mt19937_64& rng() {
  static std::mt19937_64 gen(5489u);
  return gen;
}

// A tensor the program's own code makes (a factory it called, not one inside the library)
// is data it brings: an input; one that requires grad is a leaf it trains: a parameter.
// Roles named later (a module's parameter or buffer, optimizer state) replace these.
Tensor made_by_program(Tensor t) {
  if (instrument::called_by_program() && instrument::new_storage_category() == instrument::Category::Unknown)
    emit_category(t, t.requires_grad() ? instrument::Category::Parameter : instrument::Category::Input);
  return t;
}

Tensor finish(Tensor t, const TensorOptions& o) {
  if (o.requires_grad()) t.requires_grad_(true);
  return made_by_program(std::move(t));
}

Tensor fresh(const Shape& sizes, const TensorOptions& o, ScalarType fallback = kFloat32) {
  return make_tensor(sizes, o.has_dtype() ? o.dtype() : fallback, resolve(o.device()));
}

// Calls f(draw) with draw(generator) a double from `d` (see GpuKernels::random).
template <class F>
decltype(auto) with_host_distribution(Distribution d, double a, double b, F&& f) {
  switch (d) {
    case Distribution::Normal: {
      std::normal_distribution<double> dist(a, b);
      return f([&](std::mt19937_64& g) { return dist(g); });
    }
    case Distribution::Bernoulli: {
      std::bernoulli_distribution dist(a);
      return f([&](std::mt19937_64& g) { return dist(g) ? 1.0 : 0.0; });
    }
    case Distribution::Integers: {
      std::uniform_int_distribution<std::int64_t> dist(static_cast<std::int64_t>(a), static_cast<std::int64_t>(b) - 1);
      return f([&](std::mt19937_64& g) { return static_cast<double>(dist(g)); });
    }
    case Distribution::Uniform:
      break;
  }
  std::uniform_real_distribution<double> dist(a, b);
  return f([&](std::mt19937_64& g) { return dist(g); });
}

// Random values are computed, so the trace names them as an op: a tensor drawn afresh
// each step is that step's data, not a buffer to allocate once and refill.
Tensor generate(const char* name, const Shape& sizes, const TensorOptions& o, Distribution d, double a, double b) {
  OpTrace trace;
  Tensor t = fresh(sizes, o);
  if (!t.is_floating_point())
    throw TypeError("random floats need a floating point dtype, got " + std::string(type_name(t.dtype())));
  if (on_gpu(t)) {
    gpu().random(t, d, a, b);
  } else {
    std::lock_guard lock(rng_mu);
    with_host_distribution(d, a, b, [&](auto draw) {
      dispatch(t.dtype(), [&](auto tag) {
        using T = decltype(tag);
        T* p = static_cast<T*>(t.raw_data());
        for (std::int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<T>(draw(rng()));
      });
    });
  }
  Tensor out = finish(t, o);
  trace.done(name, {}, out);
  return out;
}

TensorOptions like(const Tensor& t) { return TensorOptions(t.dtype()).device(t.device()); }

}  // namespace

void manual_seed(std::uint64_t seed) {
  MEMLENS_API_ENTRY();
  std::lock_guard lock(rng_mu);
  rng().seed(seed);
  if (auto* g = gpu_backend()) g->manual_seed(seed);
}

namespace {
// Where the GPU generator's part of an RngState begins.
constexpr std::string_view kGpuStateMark = "\ngpu ";
}  // namespace

RngState get_rng_state() {
  MEMLENS_API_ENTRY();
  std::lock_guard lock(rng_mu);
  std::ostringstream out;
  out << rng();
  if (auto* g = gpu_backend()) out << kGpuStateMark << g->generator_state();
  return {out.str()};
}

void set_rng_state(const RngState& state) {
  MEMLENS_API_ENTRY();
  const std::size_t mark = state.bytes.find(kGpuStateMark);
  std::mt19937_64 gen;
  std::istringstream in(state.bytes.substr(0, mark));
  if (!(in >> gen)) throw Error("set_rng_state: not a state get_rng_state returned");
  if (auto* g = gpu_backend()) {
    if (mark == std::string::npos) throw Error("set_rng_state: not a state get_rng_state returned");
    g->set_generator_state(state.bytes.substr(mark + kGpuStateMark.size()));
  }
  std::lock_guard lock(rng_mu);
  rng() = gen;
}

Tensor linspace(double start, double end, std::int64_t steps, TensorOptions o) {
  MEMLENS_API_ENTRY();
  if (steps < 0) throw Error("linspace(): number of steps must be non-negative");
  OpTrace trace;
  Tensor t = fresh({steps}, o);
  const double step = steps > 1 ? (end - start) / static_cast<double>(steps - 1) : 0;
  if (on_gpu(t)) gpu().arange(t, start, step, end);
  else
    dispatch(t.dtype(), [&](auto tag) {
      using T = decltype(tag);
      T* p = static_cast<T*>(t.raw_data());
      // From both ends, as PyTorch computes it, so the last value is `end` exactly.
      for (std::int64_t i = 0; i < steps; ++i)
        p[i] = static_cast<T>(i < steps / 2 ? start + step * static_cast<double>(i)
                                            : end - step * static_cast<double>(steps - 1 - i));
    });
  Tensor out = finish(t, o);
  trace.done("linspace", {}, out);
  return out;
}

Tensor randperm(std::int64_t n, TensorOptions o) {
  MEMLENS_API_ENTRY();
  if (n < 0) throw Error("randperm(): n must be non-negative, got " + std::to_string(n));
  OpTrace trace;
  Tensor t = fresh({n}, o, kInt64);
  if (on_gpu(t)) {
    gpu().randperm(t);
    trace.done("randperm", {}, t);
    return t;
  }
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) order[static_cast<std::size_t>(i)] = i;
  {
    std::lock_guard lock(rng_mu);
    for (std::int64_t i = n - 1; i > 0; --i)  // Fisher-Yates
      std::swap(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(rng()() % static_cast<std::uint64_t>(i + 1))]);
  }
  dispatch(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* p = static_cast<T*>(t.raw_data());
    for (std::int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(order[static_cast<std::size_t>(i)]);
  });
  trace.done("randperm", {}, t);
  return t;
}

namespace {
// Fills `t` in place from the generator: a random draw overwrites its history.
Tensor& fill_random(Tensor& t, const char* node, Distribution d, double a, double b) {
  autograd::check_inplace(t);
  // Drawn into a dense floating tensor, then written through t's layout and dtype.
  Tensor values;
  if (on_gpu(t)) {
    values = make_tensor(t.sizes(), t.is_floating_point() ? t.dtype() : kFloat32, t.device());
    gpu().random(values, d, a, b);
  } else {
    values = make_tensor(t.sizes(), kFloat64, t.device());
    std::lock_guard lock(rng_mu);
    double* p = values.data_ptr<double>();
    with_host_distribution(d, a, b, [&](auto draw) {
      for (std::int64_t i = 0; i < values.numel(); ++i) p[i] = draw(rng());
    });
  }
  copy_into(t, values);
  t.storage()->bump_version();
  autograd::record_overwrite(t, node);
  return t;
}
}  // namespace

Tensor& Tensor::uniform_(double from, double to) {
  MEMLENS_API_ENTRY();
  return fill_random(*this, "UniformBackward0", Distribution::Uniform, from, to);
}

Tensor& Tensor::normal_(double mean, double std) {
  MEMLENS_API_ENTRY();
  return fill_random(*this, "NormalBackward0", Distribution::Normal, mean, std);
}

Tensor& Tensor::bernoulli_(double p) {
  MEMLENS_API_ENTRY();
  if (!(p >= 0 && p <= 1)) throw Error("bernoulli_ expects p to be in [0, 1], but got p=" + std::to_string(p));
  return fill_random(*this, "BernoulliBackward0", Distribution::Bernoulli, p, 0);
}

Tensor empty(Shape sizes, TensorOptions o) {
  MEMLENS_API_ENTRY();
  return finish(fresh(sizes, o), o);
}

// A constant (full, zeros, ones) is an op with no inputs, so the trace can tell the same
// constant made every step from a buffer made empty and filled with the step's data.
Tensor full(Shape sizes, Scalar value, TensorOptions o) {
  MEMLENS_API_ENTRY();
  OpTrace trace;
  ScalarType fallback = value.kind() == kBool ? kBool : value.is_integral() ? kInt64 : kFloat32;
  Tensor t = fresh(sizes, o, fallback);
  {
    NoGradGuard g;
    t.fill_(value);
  }
  trace.done("full", {}, t);
  return finish(t, o);
}

Tensor zeros(Shape sizes, TensorOptions o) {
  MEMLENS_API_ENTRY();
  OpTrace trace;
  Tensor t = fresh(sizes, o);
  if (on_gpu(t)) gpu().zero(t);
  else std::memset(t.raw_data(), 0, t.nbytes());
  trace.done("zeros", {}, t);
  return finish(t, o);
}

Tensor ones(Shape sizes, TensorOptions o) {
  MEMLENS_API_ENTRY();
  return made_by_program(full(std::move(sizes), 1, o.dtype(o.has_dtype() ? o.dtype() : kFloat32)));
}

Tensor empty_like(const Tensor& t) {
  MEMLENS_API_ENTRY();
  return made_by_program(empty(t.sizes(), like(t)));
}
Tensor empty_like(const Tensor& t, TensorOptions o) {
  MEMLENS_API_ENTRY();
  return made_by_program(empty(t.sizes(), o));
}
Tensor zeros_like(const Tensor& t) {
  MEMLENS_API_ENTRY();
  return made_by_program(zeros(t.sizes(), like(t)));
}
Tensor zeros_like(const Tensor& t, TensorOptions o) {
  MEMLENS_API_ENTRY();
  return made_by_program(zeros(t.sizes(), o));
}
Tensor ones_like(const Tensor& t) {
  MEMLENS_API_ENTRY();
  return made_by_program(ones(t.sizes(), like(t)));
}
Tensor ones_like(const Tensor& t, TensorOptions o) {
  MEMLENS_API_ENTRY();
  return made_by_program(ones(t.sizes(), o));
}

Tensor rand(Shape sizes, TensorOptions o) {
  MEMLENS_API_ENTRY();
  return generate("rand", sizes, o, Distribution::Uniform, 0, 1);
}

Tensor randn(Shape sizes, TensorOptions o) {
  MEMLENS_API_ENTRY();
  return generate("randn", sizes, o, Distribution::Normal, 0, 1);
}

Tensor randint(std::int64_t low, std::int64_t high, Shape sizes, TensorOptions o) {
  MEMLENS_API_ENTRY();
  if (low >= high)
    throw Error("random_ expects 'from' to be less than 'to', but got from=" + std::to_string(low) +
                " >= to=" + std::to_string(high));
  OpTrace trace;
  Tensor t = fresh(sizes, o, kInt64);
  if (on_gpu(t)) {
    gpu().random(t, Distribution::Integers, static_cast<double>(low), static_cast<double>(high));
  } else {
    std::lock_guard lock(rng_mu);
    with_host_distribution(Distribution::Integers, static_cast<double>(low), static_cast<double>(high), [&](auto draw) {
      dispatch(t.dtype(), [&](auto tag) {
        using T = decltype(tag);
        T* p = static_cast<T*>(t.raw_data());
        for (std::int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<T>(draw(rng()));
      });
    });
  }
  trace.done("randint", {}, t);
  return t;
}

Tensor arange(Scalar end, TensorOptions o) {
  MEMLENS_API_ENTRY();
  return made_by_program(arange(0, end, 1, o));
}

Tensor arange(Scalar start, Scalar end, Scalar step, TensorOptions o) {
  MEMLENS_API_ENTRY();
  double s = start.to_double(), e = end.to_double(), st = step.to_double();
  if (st == 0) throw Error("step must be nonzero");
  if ((st > 0 && e < s) || (st < 0 && e > s)) throw Error("upper bound and larger bound inconsistent with step sign");
  bool integral = start.is_integral() && end.is_integral() && step.is_integral();
  auto n = static_cast<std::int64_t>(std::ceil((e - s) / st));
  Tensor t = fresh({n}, o, integral ? kInt64 : kFloat32);
  if (on_gpu(t)) gpu().arange(t, s, st, std::nullopt);
  else
    dispatch(t.dtype(), [&](auto tag) {
      using T = decltype(tag);
      T* p = static_cast<T*>(t.raw_data());
      for (std::int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(s + static_cast<double>(i) * st);
    });
  return finish(t, o);
}

Tensor eye(std::int64_t n, TensorOptions o) {
  MEMLENS_API_ENTRY();
  return made_by_program(eye(n, n, o));
}

Tensor eye(std::int64_t n, std::int64_t m, TensorOptions o) {
  MEMLENS_API_ENTRY();
  if (n < 0 || m < 0) throw ShapeError("eye: sizes must be non-negative, got " + std::to_string(n) + ", " + std::to_string(m));
  Tensor t = zeros({n, m}, o.requires_grad(false));
  {
    NoGradGuard g;
    t.diagonal().fill_(1);
  }
  return finish(t, o);
}

Tensor tensor(std::initializer_list<double> values, TensorOptions o) {
  MEMLENS_API_ENTRY();
  return made_by_program(tensor(std::vector<double>(values), {static_cast<std::int64_t>(values.size())}, o));
}

Tensor tensor(const std::vector<double>& values, Shape sizes, TensorOptions o) {
  MEMLENS_API_ENTRY();
  if (numel_of(sizes) != static_cast<std::int64_t>(values.size()))
    throw ShapeError("shape '" + shape_str(sizes) + "' is invalid for input of size " + std::to_string(values.size()));
  Tensor t = fresh(sizes, o);
  // Written on the host, then sent over once when the tensor is on a GPU.
  Tensor host = on_gpu(t) ? make_tensor(sizes, t.dtype(), kCPU) : t;
  dispatch(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* p = static_cast<T*>(host.raw_data());
    for (std::size_t i = 0; i < values.size(); ++i) p[i] = static_cast<T>(values[i]);
  });
  if (!host.is_same(t)) copy_into(t, host);
  return finish(t, o);
}

// PyTorch's scalar_tensor is float32 unless told otherwise, whatever the value's kind.
Tensor scalar_tensor(Scalar v, TensorOptions o) {
  MEMLENS_API_ENTRY();
  return full({}, v, o.has_dtype() ? o : o.dtype(kFloat32));
}

}  // namespace memlens
