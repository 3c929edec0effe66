// The CUDA backend of gpu_kernels.hpp: tensors turned into Strided descriptors and queued
// on the current stream's CUDA stream (launch.hpp), transfers between host and device,
// temporary device memory from the caching allocator, and the Philox generator's state.
#include <cuda_runtime_api.h>

#include <cstring>
#include <map>
#include <mutex>
#include <sstream>

#include "memlens/allocator/cuda_streams.hpp"
#include "../tensor_internal.hpp"
#include "launch.hpp"

namespace memlens::detail {

namespace {

void check(cudaError_t err, const char* call) {
  if (err != cudaSuccess) throw DeviceError(std::string(call) + ": " + cudaGetErrorString(err));
}

cuda::Strided strided(const Tensor& t) {
  if (t.dim() > cuda::kMaxDims)
    throw ShapeError("a tensor of " + std::to_string(t.dim()) + " dims is more than the " + std::to_string(cuda::kMaxDims) +
                     " a CUDA kernel takes");
  cuda::Strided s;
  s.data = static_cast<char*>(t.raw_data());
  s.dtype = t.dtype();
  s.ndim = static_cast<int>(t.dim());
  for (int d = 0; d < s.ndim; ++d) {
    s.sizes[d] = t.sizes()[static_cast<std::size_t>(d)];
    s.strides[d] = t.strides()[static_cast<std::size_t>(d)];
  }
  return s;
}

// The dims of `t` whose mask entry is `masked`, as a geometry of t's data.
cuda::Strided dims_of(const Tensor& t, const std::vector<bool>& mask, bool masked) {
  cuda::Strided all = strided(t), out = all;
  out.ndim = 0;
  for (int d = 0; d < all.ndim; ++d)
    if (mask[static_cast<std::size_t>(d)] == masked) {
      out.sizes[out.ndim] = all.sizes[d];
      out.strides[out.ndim] = all.strides[d];
      ++out.ndim;
    }
  return out;
}

// Makes t's GPU current for this thread, and returns the current stream there.
cudaStream_t stream_for(const Tensor& t) {
  const int want = t.storage()->device().index();
  int current = -1;
  check(cudaGetDevice(&current), "cudaGetDevice");
  if (current != want) check(cudaSetDevice(want), "cudaSetDevice");
  return cuda_streams().stream(current_stream());
}

// Scratch as uint8 tensors on t's device: the caching allocator's blocks, seen in a trace
// as the op's temporaries, held until the op returns.
class TensorScratch final : public cuda::Scratch {
 public:
  explicit TensorScratch(const Device& device) : device_(device) {}
  void* get(std::size_t bytes) override {
    held_.push_back(make_tensor({static_cast<std::int64_t>(bytes)}, kUInt8, device_));
    return held_.back().raw_data();
  }

 private:
  Device device_;
  std::vector<Tensor> held_;
};

// cuBLAS' workspace comes from the caching allocator, as PyTorch's does: one per thread,
// device and stream (a handle is per thread, and a block is reused in its stream's order),
// made at the first GEMM there and kept. So it is in the trace and in memory_allocated(),
// and an OOM for it releases the cache and retries like any other, instead of cuBLAS
// failing inside a GEMM with memory of its own. PyTorch's sizes: 32 MiB on Hopper and
// later, 8 MiB + 128 KiB before.
std::pair<void*, std::size_t> blas_workspace(const Device& device) {
  thread_local std::map<std::pair<int, StreamId>, Tensor> kept;
  Tensor& t = kept[{device.index(), current_stream()}];
  if (!t.defined()) {
    int major = 0;
    check(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device.index()), "cudaDeviceGetAttribute");
    const std::int64_t bytes = major >= 9 ? std::int64_t{32} << 20 : (std::int64_t{8} << 20) + (std::int64_t{128} << 10);
    t = make_tensor({bytes}, kUInt8, device);
  }
  return {t.raw_data(), static_cast<std::size_t>(t.numel())};
}

bool is_pinned_storage(const Tensor& t) { return t.storage()->device().type() == DeviceType::CUDAHost; }

class CudaKernels final : public GpuKernels {
 public:
  void unary(fn::UnaryId id, fn::Params p, const Tensor& out, const Tensor& in) override {
    cuda::unary(id, p, strided(out), strided(in), stream_for(out));
  }
  void binary(fn::BinaryId id, fn::Params p, const Tensor& out, const Tensor& a, const Tensor& b) override {
    cuda::binary(id, p, strided(out), strided(a), strided(b), stream_for(out));
  }
  void binary_scalar(fn::BinaryId id, fn::Params p, const Tensor& out, const Tensor& a, ScalarBits s,
                     bool scalar_first) override {
    cuda::binary_scalar(id, p, strided(out), strided(a), s, scalar_first, stream_for(out));
  }
  void where(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b) override {
    cuda::where(strided(out), strided(cond), strided(a), strided(b), stream_for(out));
  }
  void fill(const Tensor& out, ScalarBits v) override { cuda::fill(strided(out), v, stream_for(out)); }
  void triangle(const Tensor& out, std::int64_t diagonal, bool lower) override {
    cuda::triangle(strided(out), diagonal, lower, stream_for(out));
  }

  void copy(const Tensor& dst, const Tensor& src, bool non_blocking) override {
    if (on_gpu(dst) && on_gpu(src)) return copy_on_gpus(dst, src);
    if (on_gpu(dst)) return upload(dst, src, non_blocking);
    download(dst, src, non_blocking);
  }
  void zero(const Tensor& t) override { check(cudaMemsetAsync(t.raw_data(), 0, t.nbytes(), stream_for(t)), "cudaMemsetAsync"); }
  void read(const Tensor& t, std::int64_t element_offset, void* host, std::size_t bytes) override {
    cudaStream_t s = stream_for(t);
    const char* at = static_cast<const char*>(t.storage()->data()) + element_offset * static_cast<std::int64_t>(t.element_size());
    check(cudaMemcpyAsync(host, at, bytes, cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync (device to host)");
    check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  }

  void fold(const Tensor& acc, const Tensor& in, const std::vector<bool>& mask, bool product) override {
    TensorScratch scratch(in.device());
    cuda::fold(strided(acc), dims_of(in, mask, false), dims_of(in, mask, true), product, scratch, stream_for(in));
  }
  void extreme(const Tensor& values, const Tensor& indices, const Tensor& outer, std::int64_t len, std::int64_t step,
               bool want_max) override {
    TensorScratch scratch(outer.device());
    cuda::extreme(strided(values), strided(indices), strided(outer), len, step, want_max, scratch, stream_for(outer));
  }
  void cumsum(const Tensor& out, const Tensor& src, std::int64_t dim) override {
    cuda::cumsum(strided(out), strided(src), static_cast<int>(dim), stream_for(out));
  }

  std::optional<std::int64_t> first_outside(const Tensor& index, std::int64_t lo, std::int64_t hi) override {
    TensorScratch scratch(index.device());
    return cuda::first_outside(strided(index), lo, hi, scratch, stream_for(index));
  }
  void take(const Tensor& dst, std::int64_t index_dims, const Tensor& src_rest, const Tensor& index, std::int64_t scale,
            std::int64_t base) override {
    cuda::take(strided(dst), static_cast<int>(index_dims), strided(src_rest), static_cast<const std::int64_t*>(index.raw_data()),
               scale, base, stream_for(dst));
  }
  void put(const Tensor& dst_rest, const Tensor& index, std::int64_t scale, std::int64_t base, const Tensor& src,
           std::int64_t index_dims, bool accumulate) override {
    cuda::put(strided(dst_rest), static_cast<const std::int64_t*>(index.raw_data()), scale, base, strided(src),
              static_cast<int>(index_dims), accumulate, stream_for(dst_rest));
  }
  void gather(const Tensor& out, const Tensor& src, std::int64_t dim, const Tensor& index) override {
    cuda::gather(strided(out), strided(src), static_cast<int>(dim), strided(index), stream_for(out));
  }
  void scatter(const Tensor& out, std::int64_t dim, const Tensor& index, const Tensor& values, bool accumulate) override {
    cuda::scatter(strided(out), static_cast<int>(dim), strided(index), strided(values), accumulate, stream_for(out));
  }
  Tensor nonzero_positions(const Tensor& contiguous) override {
    TensorScratch scratch(contiguous.device());
    cudaStream_t s = stream_for(contiguous);
    const std::int64_t count = cuda::count_nonzero(strided(contiguous), scratch, s);
    Tensor positions = make_tensor({count}, kInt64, contiguous.device());
    cuda::nonzero_positions(strided(contiguous), static_cast<std::int64_t*>(positions.raw_data()), count, scratch, s);
    return positions;
  }
  void unravel(const Tensor& out, const Tensor& positions, const Shape& shape) override {
    cuda::Strided geometry;
    geometry.ndim = static_cast<int>(shape.size());
    if (geometry.ndim > cuda::kMaxDims) throw ShapeError("nonzero: more dims than a CUDA kernel takes");
    for (int d = 0; d < geometry.ndim; ++d) geometry.sizes[d] = shape[static_cast<std::size_t>(d)];
    cuda::unravel(static_cast<std::int64_t*>(out.raw_data()), static_cast<const std::int64_t*>(positions.raw_data()),
                  positions.numel(), geometry, stream_for(out));
  }
  void sort(const Tensor& indices, const Tensor& src, std::int64_t dim, bool descending) override {
    TensorScratch scratch(src.device());
    cuda::sort(strided(indices), strided(src), static_cast<int>(dim), descending, scratch, stream_for(src));
  }

  void random(const Tensor& out, Distribution d, double a, double b) override {
    const auto [seed, offset] = advance();
    cuda::random(strided(out), d, a, b, seed, offset, stream_for(out));
  }
  void randperm(const Tensor& out) override {
    const auto [seed, offset] = advance();
    TensorScratch scratch(out.device());
    cuda::randperm(strided(out), seed, offset, scratch, stream_for(out));
  }
  void arange(const Tensor& out, double start, double step, std::optional<double> linspace_end) override {
    cuda::arange(strided(out), start, step, linspace_end, stream_for(out));
  }
  void manual_seed(std::uint64_t seed) override {
    std::lock_guard lock(rng_mu_);
    seed_ = seed;
    offset_ = 0;
  }
  std::string generator_state() override {
    std::lock_guard lock(rng_mu_);
    return std::to_string(seed_) + " " + std::to_string(offset_);
  }
  void set_generator_state(const std::string& state) override {
    std::istringstream in(state);
    std::uint64_t seed = 0, offset = 0;
    std::string rest;
    if (!(in >> seed >> offset) || (in >> rest)) throw Error("set_rng_state: not a state get_rng_state returned");
    std::lock_guard lock(rng_mu_);
    seed_ = seed;
    offset_ = offset;
  }

  void gemm(const Tensor& out, std::int64_t ldo, const GemmOperand& a, const GemmOperand& b, std::int64_t n, std::int64_t k,
            std::int64_t p, std::int64_t batch, std::int64_t out_batch_stride, std::int64_t a_batch_stride,
            std::int64_t b_batch_stride) override {
    cudaStream_t s = stream_for(out);
    auto [workspace, workspace_bytes] = blas_workspace(out.storage()->device());
    cuda::gemm(out.raw_data(), ldo, out_batch_stride, {a.t.raw_data(), a.transposed, a.ld, a_batch_stride},
               {b.t.raw_data(), b.transposed, b.ld, b_batch_stride}, a.t.dtype(), out.dtype(), n, k, p, batch, s, workspace,
               workspace_bytes);
  }

  void im2col(const Tensor& cols, const Tensor& x, const Window& g) override {
    cuda::im2col(strided(cols), strided(x), g, stream_for(cols));
  }
  void col2im(const Tensor& x, const Tensor& cols, const Window& g) override {
    cuda::col2im(strided(x), strided(cols), g, stream_for(x));
  }
  void max_pool(const Tensor& out, const Tensor& indices, const Tensor& x, const Window& g) override {
    cuda::max_pool(strided(out), static_cast<std::int64_t*>(indices.raw_data()), strided(x), g, stream_for(out));
  }
  void max_pool_backward(const Tensor& gx, const Tensor& grad, const Tensor& indices, const Window& g) override {
    cuda::max_pool_backward(strided(gx), strided(grad), static_cast<const std::int64_t*>(indices.raw_data()), g, stream_for(gx));
  }
  void avg_pool(const Tensor& out, const Tensor& x, const Window& g, bool count_padding) override {
    cuda::avg_pool(strided(out), strided(x), g, count_padding, stream_for(out));
  }
  void avg_pool_backward(const Tensor& gx, const Tensor& grad, const Window& g, bool count_padding) override {
    cuda::avg_pool_backward(strided(gx), strided(grad), g, count_padding, stream_for(gx));
  }

 private:
  // Both on GPUs: a memcpy when the layouts and dtypes agree, else the strided convert
  // kernel; between two GPUs the bytes go over in dst's dtype, contiguous.
  void copy_on_gpus(const Tensor& dst, const Tensor& src) {
    if (dst.storage()->device() != src.storage()->device()) {
      Tensor from = src.dtype() == dst.dtype() && src.is_contiguous() ? src : transfer_copy(cast(src, dst.dtype()), src.device());
      Tensor to = dst.is_contiguous() ? dst : make_tensor(dst.sizes(), dst.dtype(), dst.device());
      check(cudaMemcpyPeerAsync(to.raw_data(), to.device().index(), from.raw_data(), from.device().index(), to.nbytes(),
                                stream_for(dst)),
            "cudaMemcpyPeerAsync");
      if (!to.is_same(dst)) cuda::convert(strided(dst), strided(to), stream_for(dst));
      return;
    }
    cudaStream_t s = stream_for(dst);
    if (dst.dtype() == src.dtype() && dst.is_contiguous() && src.is_contiguous()) {
      check(cudaMemcpyAsync(dst.raw_data(), src.raw_data(), dst.nbytes(), cudaMemcpyDeviceToDevice, s),
            "cudaMemcpyAsync (device to device)");
      return;
    }
    cuda::convert(strided(dst), strided(src), s);
  }

  // Host to GPU: the host side made contiguous in dst's dtype on the host, one transfer,
  // then a strided convert on the GPU if dst is strided. From pinned memory with
  // non_blocking the copy is left in flight, and the pinned block kept until it is done.
  void upload(const Tensor& dst, const Tensor& src, bool non_blocking) {
    Tensor host = src;
    if (src.dtype() != dst.dtype() || !src.is_contiguous()) {
      host = make_tensor(dst.sizes(), dst.dtype(), kCPU);
      copy_into(host, src);
    }
    Tensor landing = dst.is_contiguous() ? dst : make_tensor(dst.sizes(), dst.dtype(), dst.device());
    cudaStream_t s = stream_for(dst);
    check(cudaMemcpyAsync(landing.raw_data(), host.raw_data(), landing.nbytes(), cudaMemcpyHostToDevice, s),
          "cudaMemcpyAsync (host to device)");
    if (!landing.is_same(dst)) cuda::convert(strided(dst), strided(landing), s);
    if (!is_pinned_storage(host)) return;  // pageable memory is staged before the call returns
    if (non_blocking) host.record_stream(current_stream());
    else check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  }

  // GPU to host: made contiguous in dst's dtype on the GPU, one transfer, then a host copy
  // if dst is strided. Into pinned memory with non_blocking the copy is left in flight
  // (the caller synchronizes before reading, as in PyTorch).
  void download(const Tensor& dst, const Tensor& src, bool non_blocking) {
    Tensor staged = src;
    if (src.dtype() != dst.dtype() || !src.is_contiguous()) {
      staged = make_tensor(dst.sizes(), dst.dtype(), src.device());
      copy_on_gpus(staged, src);
    }
    Tensor landing = dst.is_contiguous() ? dst : make_tensor(dst.sizes(), dst.dtype(), kCPU);
    cudaStream_t s = stream_for(src);
    check(cudaMemcpyAsync(landing.raw_data(), staged.raw_data(), landing.nbytes(), cudaMemcpyDeviceToHost, s),
          "cudaMemcpyAsync (device to host)");
    if (non_blocking && landing.is_same(dst) && is_pinned_storage(dst)) {
      dst.record_stream(current_stream());
      return;
    }
    check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    if (!landing.is_same(dst)) copy_into(dst, landing);
  }

  // The generator's seed and the offset of this call's draws.
  std::pair<std::uint64_t, std::uint64_t> advance() {
    std::lock_guard lock(rng_mu_);
    const std::uint64_t at = offset_;
    offset_ += cuda::kDrawsPerElement;
    return {seed_, at};
  }

  std::mutex rng_mu_;
  std::uint64_t seed_ = 5489;  // the host generator's default seed
  std::uint64_t offset_ = 0;
};

}  // namespace

GpuKernels* gpu_backend() {
  static CudaKernels* kernels = new CudaKernels;  // process lifetime, as the allocators
  return kernels;
}

}  // namespace memlens::detail
