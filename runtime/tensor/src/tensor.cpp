// Tensor metadata, construction helpers, copies between layouts, dtypes and devices.
#include "memlens/tensor/tensor.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <sstream>

#include "tensor_internal.hpp"

namespace memlens {

namespace detail {

namespace {
std::atomic<std::uint64_t> next_tensor_id{1};
}

Shape contiguous_strides(const Shape& sizes) {
  Shape s(sizes.size(), 1);
  for (std::size_t i = sizes.size(); i-- > 1;) s[i - 1] = s[i] * std::max<std::int64_t>(sizes[i], 1);
  return s;
}

std::int64_t numel_of(const Shape& sizes) {
  std::int64_t n = 1;
  for (auto s : sizes) n *= s;
  return n;
}

Tensor make_tensor(const Shape& sizes, ScalarType dtype, const Device& resolved) {
  for (auto s : sizes)
    if (s < 0) throw ShapeError("Trying to create tensor with negative dimension " + std::to_string(s) + ": " + shape_str(sizes));
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<StorageImpl>(static_cast<std::size_t>(numel_of(sizes)) * element_size(dtype), resolved);
  impl->sizes = sizes;
  impl->strides = contiguous_strides(sizes);
  impl->dtype = dtype;
  impl->id = next_tensor_id.fetch_add(1, std::memory_order_relaxed);
  return Tensor(std::move(impl));
}

Tensor as_strided_alias(const Tensor& t, Shape sizes, Shape strides, std::int64_t offset) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = t.storage();
  impl->sizes = std::move(sizes);
  impl->strides = std::move(strides);
  impl->offset = offset;
  impl->dtype = t.dtype();
  impl->id = next_tensor_id.fetch_add(1, std::memory_order_relaxed);
  return Tensor(std::move(impl));
}

Tensor make_view(const Tensor& base, Shape sizes, Shape strides, std::int64_t offset, instrument::ViewKind kind) {
  Tensor v = as_strided_alias(base, std::move(sizes), std::move(strides), offset);
  const auto& root = base.unsafe_impl()->view_base;
  v.unsafe_impl()->view_base = root ? root : base.impl_ptr();
  v.unsafe_impl()->base_history = v.unsafe_impl()->view_base->grad_fn.get();
  emit_view(v, kind);
  return v;
}

void emit_view(const Tensor& v, instrument::ViewKind kind) {
  if (auto* sink = instrument::sink())
    sink->on_view(v.id(), v.storage()->id(), v.storage()->device(), kind, v.dtype(), v.sizes(), v.strides(), v.storage_offset());
}

void emit_copy(const Tensor& src, const Tensor& dst, instrument::CopyReason reason) {
  if (auto* sink = instrument::sink())
    sink->on_copy(src.storage()->device(), src.raw_data(), dst.storage()->device(), dst.raw_data(), dst.nbytes(), reason);
}

void emit_category(const Tensor& t, instrument::Category c) {
  if (auto* sink = instrument::sink()) sink->on_category(t.storage()->id(), t.storage()->device(), c);
}

void OpTrace::report(const char* name, std::initializer_list<const Tensor*> inputs, const Tensor& out, bool broadcasting) const {
  auto record = [](const Tensor& t) {
    return instrument::OpTensor{&t.sizes(), &t.strides(), t.dtype(), t.device(), t.storage()->id(), t.storage_offset()};
  };
  instrument::OpTensor tensors[4];
  int n = 0;
  for (const Tensor* t : inputs)
    if (n < 4) tensors[n++] = record(*t);
  sink_->on_op(name, tensors, n, record(out), out.nbytes(), start_, broadcasting);
}

Tensor layout_copy(const Tensor& t, instrument::CopyReason reason) {
  Tensor out = make_tensor(t.sizes(), t.dtype(), t.device());
  copy_into(out, t);
  emit_copy(t, out, reason);
  return out;
}

Tensor clone_for(const Tensor& t, instrument::CopyReason reason) {
  Tensor out = layout_copy(t, reason);
  autograd::record(out, "CloneBackward0", {t}, [](const Tensor& g, const autograd::Node&) { return std::vector<Tensor>{g}; });
  return out;
}

ScalarBits scalar_bits(const Scalar& s, ScalarType t) {
  return dispatch(t, [&](auto tag) {
    using T = decltype(tag);
    const T v = scalar_as<T>(s);
    if constexpr (is_floating_v<T>) return ScalarBits{static_cast<double>(v), 0};
    else return ScalarBits{0, static_cast<std::int64_t>(v)};
  });
}

std::int64_t wrap_dim(std::int64_t dim, std::int64_t ndim) {
  std::int64_t n = std::max<std::int64_t>(ndim, 1);
  if (dim < -n || dim >= n)
    throw IndexError("Dimension out of range (expected to be in range of [" + std::to_string(-n) + ", " + std::to_string(n - 1) +
                     "], but got " + std::to_string(dim) + ")");
  return dim < 0 ? dim + n : dim;
}

void check_defined(const Tensor& t, const char* op) {
  if (!t.defined()) throw Error(std::string(op) + ": expected a defined tensor but got an undefined one");
}

void check_same_device(const Tensor& a, const Tensor& b, const char* op) {
  check_defined(a, op);
  check_defined(b, op);
  if (a.device() != b.device())
    throw DeviceError("Expected all tensors to be on the same device, but found at least two devices, " + a.device().str() +
                      " and " + b.device().str() + "! (when checking arguments for " + op + ")");
}

ScalarType result_type(const Tensor& a, const Tensor& b) {
  // A 0-dim tensor only changes the result's category (bool < integral < floating).
  auto category = [](ScalarType t) { return t == kBool ? 0 : is_floating_point(t) ? 2 : 1; };
  if (a.dim() == 0 && b.dim() != 0 && category(a.dtype()) <= category(b.dtype())) return b.dtype();
  if (b.dim() == 0 && a.dim() != 0 && category(b.dtype()) <= category(a.dtype())) return a.dtype();
  return promote_types(a.dtype(), b.dtype());
}

ScalarType result_type(const Tensor& a, const Scalar& s) {
  if (s.is_floating_point() && !is_floating_point(a.dtype())) return kFloat32;
  if (a.dtype() == kBool && s.kind() == kInt64) return kInt64;
  return a.dtype();
}

namespace {
// dst (contiguous [rows, cols]) from src whose rows run down memory (src.stride(0) == 1):
// a matrix transpose, copied in square tiles so both sides stay in cache.
void copy_transposed(const Tensor& dst, const Tensor& src) {
  constexpr std::int64_t kTile = 32;
  const std::int64_t rows = dst.size(0), cols = dst.size(1), ld = src.stride(1);
  dispatch(dst.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* out = static_cast<T*>(dst.raw_data());
    const T* in = static_cast<const T*>(src.raw_data());
    for (std::int64_t r0 = 0; r0 < rows; r0 += kTile)
      for (std::int64_t c0 = 0; c0 < cols; c0 += kTile) {
        const std::int64_t r1 = std::min(rows, r0 + kTile), c1 = std::min(cols, c0 + kTile);
        for (std::int64_t r = r0; r < r1; ++r)
          for (std::int64_t c = c0; c < c1; ++c) out[r * cols + c] = in[c * ld + r];
      }
  });
}
}  // namespace

void copy_into(const Tensor& dst, const Tensor& src, bool non_blocking) {
  Shape target = broadcast_shapes(dst.sizes(), src.sizes());
  if (target != dst.sizes())
    throw ShapeError("output with shape " + shape_str(dst.sizes()) + " doesn't match the broadcast shape " + shape_str(target));
  Tensor s = expand_alias(src, dst.sizes());
  if (on_gpu(dst) || on_gpu(s)) return gpu().copy(dst, s, non_blocking);
  if (s.dtype() == dst.dtype() && s.is_contiguous() && dst.is_contiguous()) {
    std::memcpy(dst.raw_data(), s.raw_data(), dst.nbytes());
    return;
  }
  if (s.dtype() == dst.dtype() && dst.dim() == 2 && dst.is_contiguous() && s.stride(0) == 1 && s.stride(1) > 1) {
    copy_transposed(dst, s);
    return;
  }
  dispatch(dst.dtype(), [&](auto out_tag) {
    using R = decltype(out_tag);
    dispatch(s.dtype(), [&](auto in_tag) {
      using T = decltype(in_tag);
      map_unary<T, R>(dst, s, [](T v) { return static_cast<R>(v); });
    });
  });
}

Tensor transfer_copy(const Tensor& t, const Device& d) {
  Tensor out = make_tensor(t.sizes(), t.dtype(), d);
  copy_into(out, t);
  return out;
}

Tensor dim_first(const Tensor& t, std::int64_t d) {
  Shape sizes{t.size(d)}, strides{t.stride(d)};
  for (std::int64_t i = 0; i < t.dim(); ++i)
    if (i != d) sizes.push_back(t.size(i)), strides.push_back(t.stride(i));
  return as_strided_alias(t, sizes, strides, t.storage_offset());
}

Tensor without_dim(const Tensor& t, std::int64_t d) {
  Shape sizes = t.sizes(), strides = t.strides();
  sizes.erase(sizes.begin() + d);
  strides.erase(strides.begin() + d);
  return as_strided_alias(t, sizes, strides, 0);
}

double read_double(const Tensor& t, const Shape& index) {
  std::int64_t off = t.storage_offset();
  for (std::size_t d = 0; d < index.size(); ++d) off += index[d] * t.strides()[d];
  const char* base = static_cast<const char*>(t.storage()->data()) + off * static_cast<std::int64_t>(t.element_size());
  return dispatch(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T v;
    if (on_gpu(t)) gpu().read(t, off, &v, sizeof(T));
    else std::memcpy(&v, base, sizeof(T));
    return static_cast<double>(v);
  });
}

}  // namespace detail

using namespace detail;

std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

TensorImpl& Tensor::impl() const {
  if (!impl_) throw Error("cannot use an undefined tensor");
  return *impl_;
}

const Shape& Tensor::sizes() const { return impl().sizes; }
const Shape& Tensor::strides() const { return impl().strides; }
std::int64_t Tensor::size(std::int64_t d) const { return sizes()[static_cast<std::size_t>(wrap_dim(d, dim()))]; }
std::int64_t Tensor::stride(std::int64_t d) const { return strides()[static_cast<std::size_t>(wrap_dim(d, dim()))]; }
std::int64_t Tensor::numel() const { return numel_of(sizes()); }
std::int64_t Tensor::storage_offset() const { return impl().offset; }
ScalarType Tensor::dtype() const { return impl().dtype; }
std::size_t Tensor::element_size() const { return memlens::element_size(dtype()); }
Device Tensor::device() const {
  const Device& d = impl().storage->device();
  return d.type() == DeviceType::CUDAHost ? kCPU : d;  // pinned memory holds CPU tensors
}
bool Tensor::is_pinned() const { return impl().storage->device().type() == DeviceType::CUDAHost; }
bool Tensor::is_floating_point() const { return memlens::is_floating_point(dtype()); }
std::uint64_t Tensor::id() const { return impl().id; }
const std::shared_ptr<StorageImpl>& Tensor::storage() const { return impl().storage; }
bool Tensor::is_view() const { return impl().view_base != nullptr; }
std::uint32_t Tensor::_version() const { return impl().storage->version(); }

bool Tensor::is_contiguous() const {
  std::int64_t expected = 1;
  for (std::size_t i = sizes().size(); i-- > 0;) {
    if (sizes()[i] == 1) continue;
    if (strides()[i] != expected) return false;
    expected *= sizes()[i];
  }
  return true;
}

void* Tensor::raw_data() const {
  return static_cast<char*>(storage()->data()) + storage_offset() * static_cast<std::int64_t>(element_size());
}

template <class T>
T* Tensor::data_ptr() const {
  constexpr ScalarType want = std::is_same_v<T, float>          ? kFloat32
                              : std::is_same_v<T, double>       ? kFloat64
                              : std::is_same_v<T, bool>         ? kBool
                              : std::is_same_v<T, std::uint8_t> ? kUInt8
                              : std::is_same_v<T, std::int32_t> ? kInt32
                              : std::is_same_v<T, Half>         ? kFloat16
                              : std::is_same_v<T, BFloat16>     ? kBFloat16
                                                                : kInt64;
  if (dtype() != want)
    throw TypeError("expected scalar type " + std::string(type_name(want)) + " but found " + std::string(type_name(dtype())));
  return static_cast<T*>(raw_data());
}
template float* Tensor::data_ptr<float>() const;
template double* Tensor::data_ptr<double>() const;
template std::int64_t* Tensor::data_ptr<std::int64_t>() const;
template bool* Tensor::data_ptr<bool>() const;
template std::uint8_t* Tensor::data_ptr<std::uint8_t>() const;
template std::int32_t* Tensor::data_ptr<std::int32_t>() const;
template Half* Tensor::data_ptr<Half>() const;
template BFloat16* Tensor::data_ptr<BFloat16>() const;

Scalar Tensor::item() const {
  if (numel() != 1) throw Error("a Tensor with " + std::to_string(numel()) + " elements cannot be converted to Scalar");
  Shape zero(static_cast<std::size_t>(dim()), 0);
  double v = read_double(*this, zero);
  switch (dtype()) {
    case kBool:
      return Scalar(v != 0);
    case kInt64:
      return Scalar(static_cast<std::int64_t>(v));
    default:
      return Scalar(v);
  }
}

Tensor Tensor::pin_memory() const {
  MEMLENS_API_ENTRY();
  if (is_pinned()) return *this;
  if (!device().is_cpu()) throw DeviceError("cannot pin '" + device().str() + "' memory: only CPU tensors can be pinned");
  Tensor out = make_tensor(sizes(), dtype(), Device(DeviceType::CUDAHost));
  copy_into(out, *this);
  emit_copy(*this, out, instrument::CopyReason::ToDevice);
  autograd::record(out, "ToCopyBackward0", {*this},
                   [](const Tensor& g, const autograd::Node&) { return std::vector<Tensor>{g}; });
  return out;
}

Tensor Tensor::to(const Device& d) const {
  MEMLENS_API_ENTRY();
  return to(d, false);
}

// On cpu and sim every copy is done when it returns, so non_blocking changes nothing
// there. On a GPU a copy from pinned memory (or to it) is queued on the current stream
// and returns at once, as PyTorch's; the pinned block is kept from reuse until it is done.
// A non_blocking copy from a GPU to the cpu lands in pinned memory, as PyTorch's does, so
// that it can be asynchronous.
Tensor Tensor::to(const Device& d, bool non_blocking) const {
  MEMLENS_API_ENTRY();
  Device target = resolve(d);
  if (target == device()) return *this;
  const bool pinned = non_blocking && target.is_cpu() && on_gpu(*this);
  Tensor out = make_tensor(sizes(), dtype(), pinned ? Device(DeviceType::CUDAHost) : target);
  // sim and cpu both live in host memory: the transfer is a real copy of the bytes.
  copy_into(out, *this, non_blocking);
  emit_copy(*this, out, instrument::CopyReason::ToDevice);
  if (device().is_cpu() && !requires_grad()) emit_category(out, instrument::Category::Input);
  autograd::record(out, "ToCopyBackward0", {*this},
                   [src = device()](const Tensor& g, const autograd::Node&) { return std::vector<Tensor>{g.to(src)}; });
  return out;
}

Tensor Tensor::to(ScalarType t) const {
  MEMLENS_API_ENTRY();
  if (t == dtype()) return *this;
  Tensor out = make_tensor(sizes(), t, device());
  copy_into(out, *this);
  emit_copy(*this, out, instrument::CopyReason::Clone);
  if (memlens::is_floating_point(t))
    autograd::record(out, "ToCopyBackward0", {*this},
                     [src = dtype()](const Tensor& g, const autograd::Node&) { return std::vector<Tensor>{g.to(src)}; });
  return out;
}

Tensor Tensor::cpu() const {
  MEMLENS_API_ENTRY();
  return to(kCPU);
}
Tensor Tensor::cuda() const {
  MEMLENS_API_ENTRY();
  return to(Device(DeviceType::CUDA));
}

Tensor Tensor::clone() const {
  MEMLENS_API_ENTRY();
  return clone_for(*this, instrument::CopyReason::Clone);
}

Tensor Tensor::contiguous() const {
  MEMLENS_API_ENTRY();
  if (is_contiguous()) return *this;
  return clone_for(*this, instrument::CopyReason::Contiguous);
}

Tensor& Tensor::operator=(const Tensor& src) && {
  copy_(src);
  return *this;
}
Tensor& Tensor::operator=(Tensor&& src) && {
  copy_(src);
  return *this;
}
Tensor& Tensor::operator=(Scalar v) && {
  fill_(v);
  return *this;
}

TensorIndex::TensorIndex(const Tensor& t) : v_(t.impl_ptr()) {}

bool equal(const Tensor& a, const Tensor& b) {
  MEMLENS_API_ENTRY();
  if (a.sizes() != b.sizes()) return false;
  return a.ne(b).sum().item<std::int64_t>() == 0;
}

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol) {
  MEMLENS_API_ENTRY();
  NoGradGuard guard;
  Tensor x = a.to(kFloat64), y = b.to(kFloat64);
  Tensor bad = (x - y).abs().gt(y.abs() * rtol + atol);
  return bad.sum().item<std::int64_t>() == 0;
}

}  // namespace memlens
