// gemm(): cuBLAS for the floating types (one strided-batched call: float32 accumulation
// for the 16-bit types, plain FP32 for float32 as PyTorch's default without TF32), a
// kernel for integers, which cuBLAS has no GEMM for.
#include <cublas_v2.h>

#include <string>

#include "device_types.cuh"
#include "launch.hpp"

namespace memlens::cuda {

namespace {

void check_blas(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS) throw DeviceError(std::string(call) + ": " + cublasGetStatusString(status));
}

// A handle per thread (cuBLAS handles are not to be shared by threads at once), made on
// first use and destroyed when the thread ends.
class ThreadHandle {
 public:
  ThreadHandle() { check_blas(cublasCreate(&handle_), "cublasCreate"); }
  ~ThreadHandle() { cublasDestroy(handle_); }
  ThreadHandle(const ThreadHandle&) = delete;
  ThreadHandle& operator=(const ThreadHandle&) = delete;
  cublasHandle_t get() const { return handle_; }

 private:
  cublasHandle_t handle_ = nullptr;
};

cublasHandle_t handle() {
  thread_local ThreadHandle h;
  return h.get();
}

template <class S>
__global__ void integer_gemm_kernel(S* out, std::int64_t ldo, std::int64_t out_bs, Matrix a, Matrix b, std::int64_t n,
                                    std::int64_t k, std::int64_t p, std::int64_t batch) {
  const S* x = static_cast<const S*>(a.data);
  const S* y = static_cast<const S*>(b.data);
  for (std::int64_t e = global_index(); e < batch * n * p; e += grid_stride()) {
    const std::int64_t j = e % p, i = (e / p) % n, q = e / (n * p);
    S acc{};
    for (std::int64_t t = 0; t < k; ++t) {
      const S u = x[q * a.batch_stride + (a.transposed ? t * a.ld + i : i * a.ld + t)];
      const S v = y[q * b.batch_stride + (b.transposed ? j * b.ld + t : t * b.ld + j)];
      acc = static_cast<S>(acc + u * v);
    }
    out[q * out_bs + i * ldo + j] = acc;
  }
}

cudaDataType_t data_type(ScalarType t) {
  switch (t) {
    case kFloat64:
      return CUDA_R_64F;
    case kFloat16:
      return CUDA_R_16F;
    case kBFloat16:
      return CUDA_R_16BF;
    default:
      return CUDA_R_32F;
  }
}

}  // namespace

void gemm(void* out, std::int64_t ldo, std::int64_t out_batch_stride, const Matrix& a, const Matrix& b, ScalarType dtype,
          ScalarType out_dtype, std::int64_t n, std::int64_t k, std::int64_t p, std::int64_t batch, cudaStream_t s,
          void* workspace, std::size_t workspace_bytes) {
  if (n == 0 || p == 0 || batch == 0) return;
  if (!is_floating_point(dtype)) {
    dispatch_type(dtype, [&](auto tag) {
      using S = decltype(tag);
      integer_gemm_kernel<S>
          <<<blocks_for(batch * n * p), kThreads, 0, s>>>(static_cast<S*>(out), ldo, out_batch_stride, a, b, n, k, p, batch);
    });
    check_launch("gemm (integer)");
    return;
  }
  cublasHandle_t h = handle();
  check_blas(cublasSetStream(h, s), "cublasSetStream");
  // After the stream: setting one resets the handle to cuBLAS' own workspace.
  check_blas(cublasSetWorkspace(h, workspace, workspace_bytes), "cublasSetWorkspace");
  // Row-major C = A B is column-major C^T = B^T A^T: B first, the dims swapped.
  const cublasOperation_t op_b = b.transposed ? CUBLAS_OP_T : CUBLAS_OP_N, op_a = a.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  // A float32 out from 16-bit operands keeps the float32 accumulation unrounded.
  const cudaDataType_t type = data_type(dtype), out_type = data_type(out_dtype);
  const double one64 = 1, zero64 = 0;
  const float one32 = 1, zero32 = 0;
  const bool wide = dtype == kFloat64;
  check_blas(cublasGemmStridedBatchedEx(h, op_b, op_a, static_cast<int>(p), static_cast<int>(n), static_cast<int>(k),
                                        wide ? static_cast<const void*>(&one64) : &one32, b.data, type, static_cast<int>(b.ld),
                                        b.batch_stride, a.data, type, static_cast<int>(a.ld), a.batch_stride,
                                        wide ? static_cast<const void*>(&zero64) : &zero32, out, out_type, static_cast<int>(ldo),
                                        out_batch_stride, static_cast<int>(batch), wide ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F,
                                        CUBLAS_GEMM_DEFAULT),
             "cublasGemmStridedBatchedEx");
}

}  // namespace memlens::cuda
