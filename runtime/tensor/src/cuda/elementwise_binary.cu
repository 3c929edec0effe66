// binary() and binary_scalar(): one kernel per function and dtype (elementwise_fns.hpp),
// comparisons and logic writing bool.
#include "launch.hpp"
#include "map_kernel.cuh"

namespace memlens::cuda {

namespace {

template <class F>
constexpr bool floating_only = std::is_same_v<F, fn::Div> || std::is_same_v<F, fn::ThresholdBackward>;

// f with one operand a scalar, on either side.
template <class F, class C>
struct WithScalar {
  F f;
  C value;
  bool scalar_first;
  __device__ auto operator()(C u) const { return scalar_first ? f(value, u) : f(u, value); }
};

template <class F, class Go>
void for_types(const char* name, ScalarType t, Go&& go) {
  if constexpr (floating_only<F>) dispatch_floating(t, name, go);
  else dispatch_type(t, go);
}

template <class F>
void run(F f, fn::Params p, const Strided& out, const Strided& a, const Strided& b, cudaStream_t s, const char* name) {
  if constexpr (requires { f.p; }) f.p = p;
  const Strided* ops[3] = {&out, &a, &b};
  const Loop<3> loop = make_loop(ops);
  for_types<F>(name, a.dtype, [&](auto tag) {
    using S = decltype(tag);
    using R = std::conditional_t<fn::gives_bool(F::id), bool, S>;
    launch_map<R, S, S>(loop, f, s, name);
  });
}

template <class F>
void run_scalar(F f, fn::Params p, const Strided& out, const Strided& a, ScalarBits v, bool scalar_first, cudaStream_t s,
                const char* name) {
  if constexpr (requires { f.p; }) f.p = p;
  const Strided* ops[2] = {&out, &a};
  const Loop<2> loop = make_loop(ops);
  for_types<F>(name, a.dtype, [&](auto tag) {
    using S = decltype(tag);
    using C = compute_t<S>;
    using R = std::conditional_t<fn::gives_bool(F::id), bool, S>;
    // The host rounded the scalar to S; held exactly as a double or int64, it converts to C exactly.
    const C value = is_floating<S> ? static_cast<C>(v.d) : static_cast<C>(v.i);
    launch_map<R, S>(loop, WithScalar<F, C>{f, value, scalar_first}, s, name);
  });
}

}  // namespace

void binary(fn::BinaryId id, fn::Params p, const Strided& out, const Strided& a, const Strided& b, cudaStream_t s) {
  switch (id) {
#define MEMLENS_CASE(name) \
  case fn::BinaryId::name: \
    return run(fn::name{}, p, out, a, b, s, "binary " #name);
    MEMLENS_BINARY_FNS(MEMLENS_CASE)
#undef MEMLENS_CASE
  }
}

void binary_scalar(fn::BinaryId id, fn::Params p, const Strided& out, const Strided& a, ScalarBits v, bool scalar_first,
                   cudaStream_t s) {
  switch (id) {
#define MEMLENS_CASE(name) \
  case fn::BinaryId::name: \
    return run_scalar(fn::name{}, p, out, a, v, scalar_first, s, "binary scalar " #name);
    MEMLENS_BINARY_FNS(MEMLENS_CASE)
#undef MEMLENS_CASE
  }
}

}  // namespace memlens::cuda
