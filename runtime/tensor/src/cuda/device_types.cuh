#pragma once
// Device-side helpers every kernel file shares: the C++ type of each dtype, loading a
// storage type into its compute type (float for the 16-bit types, as the host computes
// them) and storing back with round-to-nearest-even, launch shapes, and the error check.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "memlens/common/error.hpp"
#include "memlens/common/scalar_type.hpp"

namespace memlens::cuda {

template <class S>
struct ComputeOf {
  using type = S;
};
template <>
struct ComputeOf<__half> {
  using type = float;
};
template <>
struct ComputeOf<__nv_bfloat16> {
  using type = float;
};
template <class S>
using compute_t = typename ComputeOf<S>::type;

template <class S>
inline constexpr bool is_floating = std::is_floating_point_v<S> || std::is_same_v<S, __half> || std::is_same_v<S, __nv_bfloat16>;

template <class S>
__device__ __forceinline__ compute_t<S> load(const S* p) {
  if constexpr (std::is_same_v<S, __half>) return __half2float(*p);
  else if constexpr (std::is_same_v<S, __nv_bfloat16>) return __bfloat162float(*p);
  else return *p;
}

// v in S, as the host's static_cast<S> gives it (16-bit: through float, to nearest even).
template <class S, class V>
__device__ __forceinline__ S to_storage(V v) {
  if constexpr (std::is_same_v<S, __half>) return __float2half_rn(static_cast<float>(v));
  else if constexpr (std::is_same_v<S, __nv_bfloat16>) return __float2bfloat16_rn(static_cast<float>(v));
  else return static_cast<S>(v);
}

template <class S>
__device__ __forceinline__ compute_t<S> from_bits(double d, std::int64_t i) {
  if constexpr (is_floating<S>) return static_cast<compute_t<S>>(d);
  else return static_cast<S>(i);
}

// Calls f(S{}) with S the device type of `t`.
template <class F>
void dispatch_type(ScalarType t, F&& f) {
  switch (t) {
    case kBool:
      return f(bool{});
    case kInt64:
      return f(std::int64_t{});
    case kFloat32:
      return f(float{});
    case kFloat64:
      return f(double{});
    case kUInt8:
      return f(std::uint8_t{});
    case kInt32:
      return f(std::int32_t{});
    case kFloat16:
      return f(__half{});
    case kBFloat16:
      return f(__nv_bfloat16{});
  }
}
// The same over the floating types only; others are an error (callers pass floats).
template <class F>
void dispatch_floating(ScalarType t, const char* kernel, F&& f) {
  switch (t) {
    case kFloat32:
      return f(float{});
    case kFloat64:
      return f(double{});
    case kFloat16:
      return f(__half{});
    case kBFloat16:
      return f(__nv_bfloat16{});
    default:
      break;
  }
  throw DeviceError(std::string(kernel) + ": no CUDA kernel for dtype " + std::string(type_name(t)));
}

inline constexpr int kThreads = 256;

// Blocks for a grid-stride loop over n items: enough to fill the device, never more
// than the items need.
inline unsigned blocks_for(std::int64_t n, int per_thread = 1) {
  const std::int64_t want = (n + static_cast<std::int64_t>(kThreads) * per_thread - 1) / (kThreads * per_thread);
  constexpr std::int64_t kMaxBlocks = 65535LL * 8;
  return static_cast<unsigned>(want < 1 ? 1 : want > kMaxBlocks ? kMaxBlocks : want);
}

__device__ __forceinline__ std::int64_t global_index() {
  return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ std::int64_t grid_stride() { return static_cast<std::int64_t>(gridDim.x) * blockDim.x; }

// Throws DeviceError("what: CUDA's error string") when err is not success.
inline void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) throw DeviceError(std::string(what) + ": " + cudaGetErrorString(err));
}
// After a launch: a bad configuration or an earlier kernel's fault, named.
inline void check_launch(const char* kernel) { check(cudaGetLastError(), kernel); }

// dst[0] += v, atomically, for every dtype (16-bit and 8-bit ones through a CAS on the
// 32-bit word that holds them).
template <class S>
__device__ void atomic_add(S* dst, compute_t<S> v) {
  if constexpr (std::is_same_v<S, float> || std::is_same_v<S, double> || std::is_same_v<S, std::int32_t>) {
    atomicAdd(dst, v);
  } else if constexpr (std::is_same_v<S, std::int64_t>) {
    atomicAdd(reinterpret_cast<unsigned long long*>(dst), static_cast<unsigned long long>(v));
  } else if constexpr (std::is_same_v<S, bool>) {
    if (v) *dst = true;  // a bool sum is an or
  } else {
    static_assert(sizeof(S) <= 2, "narrow types only");
    auto addr = reinterpret_cast<std::uintptr_t>(dst);
    auto* word = reinterpret_cast<unsigned int*>(addr & ~std::uintptr_t{3});
    const unsigned shift = static_cast<unsigned>(addr & 3) * 8;
    constexpr unsigned kMask = sizeof(S) == 2 ? 0xffffu : 0xffu;
    unsigned old = *word, assumed;
    do {
      assumed = old;
      S current;
      const auto bits = static_cast<std::uint16_t>((assumed >> shift) & kMask);
      memcpy(&current, &bits, sizeof(S));
      S sum = to_storage<S>(load(&current) + v);
      std::uint16_t sum_bits = 0;
      memcpy(&sum_bits, &sum, sizeof(S));
      const unsigned replaced = (assumed & ~(kMask << shift)) | (static_cast<unsigned>(sum_bits) << shift);
      old = atomicCAS(word, assumed, replaced);
    } while (old != assumed);
  }
}

}  // namespace memlens::cuda
