// unary(): one kernel per function and dtype, the functions of elementwise_fns.hpp.
#include "launch.hpp"
#include "map_kernel.cuh"

namespace memlens::cuda {

namespace {

// Functions the runtime calls only on floating compute types (elementwise.cpp's floating()).
template <class F>
constexpr bool floating_only = !(std::is_same_v<F, fn::Neg> || std::is_same_v<F, fn::Abs> || std::is_same_v<F, fn::Relu> ||
                                 std::is_same_v<F, fn::Clamp> || std::is_same_v<F, fn::Sign>);

template <class F>
void run(F f, fn::Params p, const Loop<2>& loop, cudaStream_t s, const char* name) {
  if constexpr (requires { f.p; }) f.p = p;
  auto go = [&](auto tag) {
    using S = decltype(tag);
    launch_map<S, S>(loop, f, s, name);
  };
  if constexpr (floating_only<F>) dispatch_floating(loop.dtype[1], name, go);
  else dispatch_type(loop.dtype[1], go);
}

}  // namespace

void unary(fn::UnaryId id, fn::Params p, const Strided& out, const Strided& in, cudaStream_t s) {
  const Strided* ops[2] = {&out, &in};
  const Loop<2> loop = make_loop(ops);
  switch (id) {
#define MEMLENS_CASE(name) \
  case fn::UnaryId::name:  \
    return run(fn::name{}, p, loop, s, "unary " #name);
    MEMLENS_UNARY_FNS(MEMLENS_CASE)
#undef MEMLENS_CASE
  }
}

}  // namespace memlens::cuda
