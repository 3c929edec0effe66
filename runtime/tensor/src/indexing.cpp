// `t.index({...})` basic indexing (views) and the indexing ops that copy.
#include <cstring>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "advanced_index.hpp"
#include "tensor_internal.hpp"

namespace memlens {

using namespace detail;
using autograd::Node;
using Grads = std::vector<Tensor>;

namespace {

// `t.index({...})` split in two: the integers, slices, None and Ellipsis applied as views,
// and the tensor items left over with the dim of that view each stands at.
struct SplitIndex {
  Tensor view;
  std::vector<std::pair<std::int64_t, Tensor>> tensors;
};

SplitIndex split_index(const Tensor& self, const std::vector<TensorIndex>& idx) {
  // Dims of self an item addresses: a bool mask as many as it has, others one.
  auto addressed = [](const TensorIndex::Value& v) -> std::int64_t {
    if (std::holds_alternative<std::nullopt_t>(v) || std::holds_alternative<indexing::EllipsisIndexType>(v)) return 0;
    if (auto* t = std::get_if<std::shared_ptr<TensorImpl>>(&v))
      return (*t)->dtype == kBool || (*t)->dtype == kUInt8 ? static_cast<std::int64_t>((*t)->sizes.size()) : 1;
    return 1;
  };
  std::int64_t consumed = 0;
  bool ellipsis = false;
  for (auto& it : idx) {
    if (std::holds_alternative<indexing::EllipsisIndexType>(it.value())) {
      if (ellipsis) throw IndexError("an index can only have a single ellipsis ('...')");
      ellipsis = true;
    }
    consumed += addressed(it.value());
  }
  if (consumed > self.dim()) throw IndexError("too many indices for tensor of dimension " + std::to_string(self.dim()));
  SplitIndex split{self, {}};
  Tensor& out = split.view;
  std::int64_t d = 0;  // current dim of `out`
  for (auto& it : idx) {
    const auto& v = it.value();
    if (auto* i = std::get_if<std::int64_t>(&v)) {
      out = out.select(d, *i);
    } else if (auto* s = std::get_if<indexing::Slice>(&v)) {
      out = out.slice(d, s->start, s->stop, s->step);
      ++d;
    } else if (std::holds_alternative<std::nullopt_t>(v)) {
      out = out.unsqueeze(d);
      ++d;
    } else if (std::holds_alternative<indexing::EllipsisIndexType>(v)) {
      d += self.dim() - consumed;
    } else {
      split.tensors.emplace_back(d, Tensor(std::get<std::shared_ptr<TensorImpl>>(v)));
      d += addressed(v);
    }
  }
  return split;
}

Tensor apply_index(const Tensor& self, const std::vector<TensorIndex>& idx) {
  SplitIndex split = split_index(self, idx);
  Tensor& out = split.view;
  if (split.tensors.empty()) return out;
  if (split.tensors.size() == 1) {  // the common cases keep their own ops
    auto [dim, index] = split.tensors.front();
    if (index.dtype() == kBool && dim == 0 && index.sizes() == out.sizes()) return out.masked_select(index);
    if (index.dtype() == kInt64 && index.dim() == 1) {
      // Indexing counts negative positions from the end (index_select does not).
      if (index.numel() > 0 && index.min().item<std::int64_t>() < 0) index = where(index.lt(0), index + out.size(dim), index);
      return out.index_select(dim, index);
    }
  }
  OpTrace trace;
  AdvancedIndex ix(out, split.tensors);
  Tensor result = ix.gather(out);
  emit_copy(out, result, instrument::CopyReason::Index);
  trace.done("index", {&out}, result);
  autograd::record(result, "IndexBackward0", {out}, [shape = out.sizes(), ix](const Tensor& g, const Node&) {
    Tensor gi = zeros(shape, TensorOptions(g.dtype()).device(g.device()));
    ix.put(gi, g, true);
    return Grads{gi};
  });
  return result;
}

}  // namespace

Tensor Tensor::index(std::initializer_list<TensorIndex> idx) const {
  MEMLENS_API_ENTRY();
  return apply_index(*this, idx);
}
Tensor Tensor::index(const std::vector<TensorIndex>& idx) const {
  MEMLENS_API_ENTRY();
  return apply_index(*this, idx);
}
Tensor Tensor::operator[](const Tensor& idx) const { return apply_index(*this, {TensorIndex(idx)}); }

Tensor& Tensor::index_put_(const std::vector<TensorIndex>& idx, const Tensor& value, bool accumulate) {
  MEMLENS_API_ENTRY();
  check_defined(value, "index_put_");
  autograd::check_inplace(*this);
  SplitIndex split = split_index(*this, idx);
  Tensor& target = split.view;
  if (split.tensors.empty()) {
    if (accumulate) target.add_(value);
    else target.copy_(value);
    return *this;
  }
  check_same_device(*this, value, "index_put_");
  AdvancedIndex ix(target, split.tensors);
  Tensor values;
  try {
    values = expand_alias(value.dtype() == dtype() ? value : value.to(dtype()), ix.result_shape());
  } catch (const ShapeError&) {
    throw ShapeError("shape mismatch: value tensor of shape " + shape_str(value.sizes()) +
                     " cannot be broadcast to indexing result of shape " + shape_str(ix.result_shape()));
  }
  OpTrace trace;
  write_in_place(
      target, &value, [&] { ix.put(target, values, accumulate); },
      [&](const Tensor& copy) {
        ix.put(copy, values, accumulate);
        Tensor result = copy;
        autograd::record(result, "IndexPutBackward0", {copy, value},
                         [ix, accumulate, value_shape = value.sizes()](const Tensor& g, const Node& self) {
                           Grads grads(2);
                           if (self.needs_input_grad(0)) {
                             grads[0] = g.clone();
                             if (!accumulate)
                               ix.put(grads[0], zeros(ix.result_shape(), TensorOptions(g.dtype()).device(g.device())), false);
                           }
                           if (self.needs_input_grad(1)) grads[1] = autograd::sum_to(ix.gather(g), value_shape);
                           return grads;
                         });
        return result;
      });
  trace.done("index_put_", {this, &value}, *this);
  return *this;
}

Tensor& Tensor::index_put_(const std::vector<TensorIndex>& idx, Scalar value) {
  MEMLENS_API_ENTRY();
  return index_put_(idx, full({}, value, TensorOptions(dtype()).device(device())));
}

namespace {
// Slice i along dim d as an alias: the op's own access, so no view is recorded (a view
// event per row would fill the trace and the storage's view chain).
Tensor slice_alias(const Tensor& t, std::int64_t d, std::int64_t i) {
  Shape sizes = t.sizes(), strides = t.strides();
  sizes.erase(sizes.begin() + d);
  strides.erase(strides.begin() + d);
  return as_strided_alias(t, sizes, strides, t.storage_offset() + i * t.stride(d));
}

}  // namespace

namespace detail {
void accumulate_into(const Tensor& dst, const Tensor& src) {
  if (on_gpu(dst)) {
    if (dst.dtype() != kBool) gpu().binary(fn::BinaryId::Add, {}, dst, dst, src);
    return;
  }
  dispatch(dst.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>)
      for_each_strided<2>(dst.sizes(), {data_bytes(dst), data_bytes(src)}, {&dst.strides(), &src.strides()},
                          {static_cast<std::int64_t>(sizeof(T)), static_cast<std::int64_t>(sizeof(T))},
                          [](std::array<char*, 2> p, std::array<std::int64_t, 2> st, std::int64_t n) {
                            for (std::int64_t i = 0; i < n; ++i)
                              *reinterpret_cast<T*>(p[0] + i * st[0]) += *reinterpret_cast<const T*>(p[1] + i * st[1]);
                          });
  });
}
}  // namespace detail

Tensor Tensor::index_select(std::int64_t d, const Tensor& index) const {
  MEMLENS_API_ENTRY();
  check_same_device(*this, index, "index_select");
  if (index.dtype() != kInt64 && index.dtype() != kInt32)
    throw TypeError("index_select(): Expected dtype int32 or int64 for index but got " + std::string(type_name(index.dtype())));
  if (index.dim() > 1) throw IndexError("index_select(): Index is supposed to be a vector");
  d = wrap_dim(d, dim());
  std::int64_t n = dim() == 0 ? 1 : size(d);
  OpTrace trace;
  Tensor idx = cast(index, kInt64).contiguous().reshape({-1});  // int32 indices widened once
  Shape out_shape = sizes();
  if (dim() > 0) out_shape[static_cast<std::size_t>(d)] = idx.numel();
  Tensor out = make_tensor(out_shape, dtype(), device());
  auto out_of_range = [&](std::int64_t i) {  // no wrapping of negative indices, as PyTorch's index_select
    return IndexError("index out of range in self (index " + std::to_string(i) + " for dimension " + std::to_string(d) +
                      " with size " + std::to_string(n) + ")");
  };
  if (on_gpu(out)) {
    if (auto bad = gpu().first_outside(idx, 0, n)) throw out_of_range(*bad);
    if (dim() == 0) {
      if (idx.numel() > 0) copy_into(out, *this);
    } else {
      gpu().take(dim_first(out, d), 1, without_dim(*this, d), idx, stride(d), storage_offset());
    }
  } else {
    const auto* ip = static_cast<const std::int64_t*>(idx.raw_data());
    for (std::int64_t k = 0; k < idx.numel(); ++k) {
      std::int64_t i = ip[k];
      if (i < 0 || i >= n) throw out_of_range(i);
      if (dim() == 0) copy_into(out, *this);
      else copy_into(slice_alias(out, d, k), slice_alias(*this, d, i));
    }
  }
  emit_copy(*this, out, instrument::CopyReason::Index);
  trace.done("index_select", {this, &index}, out);
  autograd::record(out, "IndexSelectBackward0", {*this}, [in = sizes(), d, idx](const Tensor& g, const Node&) {
    return Grads{detail::index_select_backward(in, d, idx, g)};
  });
  return out;
}

namespace detail {
Tensor index_select_backward(const Shape& shape, std::int64_t d, const Tensor& idx, const Tensor& grad) {
  Tensor gi = zeros(shape, TensorOptions(grad.dtype()).device(grad.device()));
  if (on_gpu(gi) && gi.dim() > 0) {
    gpu().put(without_dim(gi, d), idx, gi.stride(d), gi.storage_offset(), dim_first(grad, d), 1, true);
    return gi;
  }
  if (on_gpu(gi)) {  // a 0-dim tensor selected idx.numel() times
    for (std::int64_t k = 0; k < idx.numel(); ++k) accumulate_into(gi, grad);
    return gi;
  }
  const auto* p = static_cast<const std::int64_t*>(idx.raw_data());
  for (std::int64_t k = 0; k < idx.numel(); ++k)
    accumulate_into(gi.dim() == 0 ? gi : slice_alias(gi, d, p[k]), grad.dim() == 0 ? grad : slice_alias(grad, d, k));
  return gi;
}
}  // namespace detail

namespace {

// Calls f(k, coordinates) for every element of a contiguous tensor of `shape`, in order.
template <class F>
void for_each_coordinate(const Shape& shape, F&& f) {
  const std::int64_t n = numel_of(shape);
  Shape at(shape.size(), 0);
  for (std::int64_t k = 0; k < n; ++k) {
    f(k, at);
    for (std::size_t d = at.size(); d-- > 0;) {  // the next coordinates, last dim fastest
      if (++at[static_cast<std::size_t>(d)] < shape[d]) break;
      at[d] = 0;
    }
  }
}

// Where gather's k-th index element points in a tensor of `strides`: its own coordinates,
// with the index value along `dim`.
std::int64_t gathered_at(const Shape& at, std::int64_t dim, std::int64_t i, const Shape& strides) {
  std::int64_t pos = 0;
  for (std::size_t d = 0; d < at.size(); ++d) pos += (static_cast<std::int64_t>(d) == dim ? i : at[d]) * strides[d];
  return pos;
}

std::int64_t offset_of(const Shape& at, const Shape& strides) {
  std::int64_t pos = 0;
  for (std::size_t d = 0; d < at.size(); ++d) pos += at[d] * strides[d];
  return pos;
}

// Throws error(i) for the first index element i (row-major) outside [0, n).
template <class Error>
void check_indices(const Tensor& index, std::int64_t n, Error&& error) {
  if (on_gpu(index)) {
    if (auto bad = gpu().first_outside(index, 0, n)) throw error(*bad);
    return;
  }
  const auto* ip = static_cast<const std::int64_t*>(index.raw_data());
  for_each_coordinate(index.sizes(), [&](std::int64_t, const Shape& at) {
    std::int64_t i = ip[offset_of(at, index.strides())];
    if (i < 0 || i >= n) throw error(i);
  });
}

}  // namespace

Tensor Tensor::gather(std::int64_t d, const Tensor& index) const {
  MEMLENS_API_ENTRY();
  check_same_device(*this, index, "gather");
  if (index.dtype() != kInt64)
    throw TypeError("gather(): Expected dtype int64 for index but got " + std::string(type_name(index.dtype())));
  if (index.dim() != dim())
    throw Error("gather(): Index tensor must have the same number of dimensions as input tensor (" + std::to_string(index.dim()) +
                " vs " + std::to_string(dim()) + ")");
  d = wrap_dim(d, dim());
  for (std::int64_t k = 0; k < dim(); ++k)
    if (k != d && index.size(k) > size(k))
      throw Error("gather(): Size does not match at dimension " + std::to_string(k) + " expected index " +
                  shape_str(index.sizes()) + " to be smaller than self " + shape_str(sizes()) + " apart from dimension " +
                  std::to_string(d));
  const std::int64_t n = size(d);
  // Strided reads: neither the input nor the index is copied to make it contiguous (a
  // copy here would be the library's, charged to the caller's line).
  check_indices(index, n, [&](std::int64_t i) {
    return Error("gather(): index " + std::to_string(i) + " is out of bounds for dimension " + std::to_string(d) + " with size " +
                 std::to_string(n));
  });
  OpTrace trace;
  Tensor out = make_tensor(index.sizes(), dtype(), device());
  const auto* ip = static_cast<const std::int64_t*>(index.raw_data());
  if (on_gpu(out)) gpu().gather(out, *this, d, index);
  else
    dispatch(dtype(), [&](auto t) {
      using T = decltype(t);
      const T* src = static_cast<const T*>(raw_data());
      T* o = static_cast<T*>(out.raw_data());
      for_each_coordinate(index.sizes(), [&](std::int64_t k, const Shape& at) {
        o[k] = src[gathered_at(at, d, ip[offset_of(at, index.strides())], strides())];
      });
    });
  trace.done("gather", {this, &index}, out);
  autograd::record(out, "GatherBackward0", {*this}, [in = sizes(), d, index](const Tensor& g, const Node&) {
    return Grads{detail::scatter_add(in, d, index, g)};
  });
  return out;
}

namespace {

// values written (or added) into out at index along d: the one loop behind scatter,
// scatter_add and gather's backward.
void scatter_into(const Tensor& out, std::int64_t d, const Tensor& index, const Tensor& values, bool add) {
  if (on_gpu(out)) {
    gpu().scatter(out, d, index, values, add);
    return;
  }
  const auto* ip = static_cast<const std::int64_t*>(index.raw_data());
  dispatch(out.dtype(), [&](auto t) {
    using T = decltype(t);
    const T* vp = static_cast<const T*>(values.raw_data());
    T* o = static_cast<T*>(out.raw_data());
    for_each_coordinate(index.sizes(), [&](std::int64_t, const Shape& at) {
      T& dst = o[gathered_at(at, d, ip[offset_of(at, index.strides())], out.strides())];
      const T v = vp[offset_of(at, values.strides())];
      if constexpr (std::is_same_v<T, bool>) dst = add ? (dst || v) : v;
      else dst = add ? static_cast<T>(dst + v) : v;
    });
  });
}

// scatter and scatter_add: src's values written (or added) into a copy of self at index
// along d, after PyTorch's checks.
Tensor scattered(const Tensor& self, std::int64_t d, const Tensor& index, const Tensor& src, bool add) {
  const char* op = add ? "scatter_add" : "scatter";
  check_same_device(self, index, op);
  check_same_device(self, src, op);
  if (index.dtype() != kInt64)
    throw TypeError(std::string(op) + "(): Expected dtype int64 for index but got " + std::string(type_name(index.dtype())));
  if (index.dim() != self.dim() || src.dim() != self.dim())
    throw Error(std::string(op) + "(): Index tensor must have the same number of dimensions as self tensor");
  d = wrap_dim(d, self.dim());
  for (std::int64_t k = 0; k < self.dim(); ++k)
    if (index.size(k) > src.size(k) || (k != d && index.size(k) > self.size(k)))
      throw Error(std::string(op) + "(): Expected index " + shape_str(index.sizes()) + " to be smaller than self " +
                  shape_str(self.sizes()) + " apart from dimension " + std::to_string(d) + " and to be smaller size than src " +
                  shape_str(src.sizes()));
  check_indices(index, self.size(d), [&](std::int64_t i) {
    return Error(std::string(op) + "(): index " + std::to_string(i) + " is out of bounds for dimension " + std::to_string(d) +
                 " with size " + std::to_string(self.size(d)));
  });
  OpTrace trace;
  Tensor out = detail::layout_copy(self, instrument::CopyReason::Clone);
  scatter_into(out, d, index, cast(src, self.dtype()), add);
  trace.done(op, {&self, &index, &src}, out);
  autograd::record(
      out, add ? "ScatterAddBackward0" : "ScatterBackward0", {self, src}, [d, index, add](const Tensor& g, const Node& n) {
        // Self's gradient is g where nothing was written (all of g when adding); src's is g
        // where each of its values went.
        Tensor self_grad;
        if (n.needs_input_grad(0))
          self_grad = add ? g : g.scatter(d, index, zeros(index.sizes(), TensorOptions(g.dtype()).device(g.device())));
        return Grads{self_grad, n.needs_input_grad(1) ? g.gather(d, index) : Tensor()};
      });
  return out;
}

}  // namespace

Tensor Tensor::scatter(std::int64_t d, const Tensor& index, const Tensor& src) const {
  MEMLENS_API_ENTRY();
  return scattered(*this, d, index, src, false);
}

Tensor Tensor::scatter_add(std::int64_t d, const Tensor& index, const Tensor& src) const {
  MEMLENS_API_ENTRY();
  return scattered(*this, d, index, src, true);
}

Tensor Tensor::index_add(std::int64_t d, const Tensor& index, const Tensor& source, Scalar alpha) const {
  MEMLENS_API_ENTRY();
  // Before anything reads them: on a GPU a host index or source would reach the kernel as
  // a host pointer, an illegal address that poisons the process.
  check_same_device(*this, index, "index_add");
  check_same_device(*this, source, "index_add");
  if (index.dtype() != kInt64 || index.dim() > 1)
    throw IndexError("index_add(): Index is supposed to be a vector of dtype int64");
  d = wrap_dim(d, dim());
  Tensor idx = index.reshape({-1});
  Shape want = sizes();
  want[static_cast<std::size_t>(d)] = idx.numel();
  if (source.sizes() != want)
    throw ShapeError("index_add(): source " + shape_str(source.sizes()) + " must be " + shape_str(want));
  Tensor ic = idx.contiguous();
  check_indices(ic, size(d), [&](std::int64_t i) {
    return IndexError("index_add(): index " + std::to_string(i) + " is out of bounds for dimension " + std::to_string(d) +
                      " with size " + std::to_string(size(d)));
  });
  OpTrace trace;
  Tensor out = detail::layout_copy(*this, instrument::CopyReason::Clone);
  Tensor scaled = cast(source, dtype());
  if (alpha.to_double() != 1) {
    NoGradGuard no_grad;
    scaled = scaled * alpha;
  }
  if (on_gpu(out)) {
    gpu().put(without_dim(out, d), ic, out.stride(d), out.storage_offset(), dim_first(scaled, d), 1, true);
  } else {
    const auto* ip = static_cast<const std::int64_t*>(ic.raw_data());
    for (std::int64_t k = 0; k < ic.numel(); ++k) accumulate_into(slice_alias(out, d, ip[k]), slice_alias(scaled, d, k));
  }
  trace.done("index_add", {this, &index, &source}, out);
  autograd::record(out, "IndexAddBackward0", {*this, source}, [d, ic, alpha](const Tensor& g, const Node& n) {
    return Grads{g, n.needs_input_grad(1) ? g.index_select(d, ic) * alpha : Tensor()};
  });
  return out;
}

namespace detail {
Tensor scatter_add(const Shape& shape, std::int64_t d, const Tensor& index, const Tensor& values) {
  // Into a fresh tensor: an element picked twice gets both.
  Tensor out = zeros(shape, TensorOptions(values.dtype()).device(values.device()));
  scatter_into(out, d, index, values, true);
  return out;
}
}  // namespace detail

Tensor Tensor::masked_select(const Tensor& mask) const {
  MEMLENS_API_ENTRY();
  check_same_device(*this, mask, "masked_select");
  if (mask.dtype() != kBool)
    throw TypeError("masked_select: expected BoolTensor for mask, got " + std::string(type_name(mask.dtype())));
  OpTrace trace;
  Shape shape = broadcast_shapes(sizes(), mask.sizes());
  Tensor src = expand_alias(*this, shape).contiguous();
  Tensor m = expand_alias(mask, shape).contiguous();
  if (on_gpu(m)) {
    Tensor positions = gpu().nonzero_positions(m);
    Tensor out = make_tensor({positions.numel()}, dtype(), device());
    gpu().take(out, 1, as_strided_alias(src, {}, {}, 0), positions, 1, src.storage_offset());
    emit_copy(*this, out, instrument::CopyReason::Index);
    trace.done("masked_select", {this, &mask}, out);
    // Backward finds the positions again from the mask, which is all it keeps (as PyTorch's).
    autograd::record(out, "MaskedSelectBackward0", {*this}, [in = sizes(), shape, m](const Tensor& g, const Node&) {
      Tensor gi = zeros(shape, TensorOptions(g.dtype()).device(g.device()));
      gpu().put(as_strided_alias(gi, {}, {}, 0), gpu().nonzero_positions(m), 1, gi.storage_offset(), g, 1, false);
      return Grads{autograd::sum_to(gi, in)};
    });
    return out;
  }
  const bool* mp = static_cast<const bool*>(m.raw_data());
  std::int64_t count = 0;
  for (std::int64_t i = 0; i < m.numel(); ++i) count += mp[i];
  Tensor out = make_tensor({count}, dtype(), device());
  const char* s = static_cast<const char*>(src.raw_data());
  char* o = static_cast<char*>(out.raw_data());
  std::size_t es = element_size();
  for (std::int64_t i = 0, k = 0; i < m.numel(); ++i)
    if (mp[i]) std::memcpy(o + es * static_cast<std::size_t>(k++), s + es * static_cast<std::size_t>(i), es);
  emit_copy(*this, out, instrument::CopyReason::Index);
  trace.done("masked_select", {this, &mask}, out);
  autograd::record(out, "MaskedSelectBackward0", {*this}, [in = sizes(), shape, m](const Tensor& g, const Node&) {
    Tensor gi = zeros(shape, TensorOptions(g.dtype()).device(g.device()));
    Tensor gc = g.contiguous();
    const bool* mp = static_cast<const bool*>(m.raw_data());
    std::size_t es = gi.element_size();
    char* o = static_cast<char*>(gi.raw_data());
    const char* s = static_cast<const char*>(gc.raw_data());
    for (std::int64_t i = 0, k = 0; i < m.numel(); ++i)
      if (mp[i]) std::memcpy(o + es * static_cast<std::size_t>(i), s + es * static_cast<std::size_t>(k++), es);
    return Grads{autograd::sum_to(gi, in)};
  });
  return out;
}

Tensor Tensor::nonzero() const {
  MEMLENS_API_ENTRY();
  OpTrace trace;
  if (on_gpu(*this)) {
    Tensor positions = gpu().nonzero_positions(contiguous());
    Tensor out = make_tensor({positions.numel(), dim()}, kInt64, device());
    gpu().unravel(out, positions, sizes());
    trace.done("nonzero", {this}, out);
    return out;
  }
  std::vector<std::int64_t> coords;
  std::int64_t count = 0;
  dispatch(dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = static_cast<const T*>(raw_data());
    for_each_coordinate(sizes(), [&](std::int64_t, const Shape& at) {
      if (p[offset_of(at, strides())] != T(0)) {
        coords.insert(coords.end(), at.begin(), at.end());
        ++count;
      }
    });
  });
  Tensor out = make_tensor({count, dim()}, kInt64, device());
  if (!coords.empty()) std::copy(coords.begin(), coords.end(), out.data_ptr<std::int64_t>());
  trace.done("nonzero", {this}, out);
  return out;
}

std::tuple<Tensor, Tensor> Tensor::sort(std::int64_t d, bool descending) const {
  MEMLENS_API_ENTRY();
  if (dim() == 0) return {clone(), zeros({}, TensorOptions().dtype(kInt64).device(device()))};
  d = wrap_dim(d, dim());
  OpTrace trace;
  Tensor indices = make_tensor(sizes(), kInt64, device());
  Shape outer = sizes();
  outer[static_cast<std::size_t>(d)] = 1;
  const std::int64_t len = size(d), step = stride(d);
  if (on_gpu(indices)) {
    gpu().sort(indices, *this, d, descending);
    trace.done("sort", {this}, indices);
    return {gather(d, indices), indices};
  }
  auto* ip = indices.data_ptr<std::int64_t>();
  const Shape index_strides = indices.strides();
  dispatch(dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = static_cast<const T*>(raw_data());
    std::vector<std::int64_t> order(static_cast<std::size_t>(len));
    for_each_coordinate(outer, [&](std::int64_t, const Shape& at) {
      const T* x = p + offset_of(at, strides());
      std::iota(order.begin(), order.end(), 0);
      // NaN sorts as the largest value, as in PyTorch; equal values keep their order.
      auto before = [&](std::int64_t a, std::int64_t b) {
        double u = static_cast<double>(x[a * step]), v = static_cast<double>(x[b * step]);
        bool nu = std::isnan(u), nv = std::isnan(v);
        if (nu || nv) return descending ? nu && !nv : !nu && nv;
        return descending ? u > v : u < v;
      };
      std::stable_sort(order.begin(), order.end(), before);
      std::int64_t* out = ip + offset_of(at, index_strides);
      for (std::int64_t k = 0; k < len; ++k)
        out[k * index_strides[static_cast<std::size_t>(d)]] = order[static_cast<std::size_t>(k)];
    });
  });
  trace.done("sort", {this}, indices);
  return {gather(d, indices), indices};
}

Tensor Tensor::argsort(std::int64_t d, bool descending) const {
  MEMLENS_API_ENTRY();
  return std::get<1>(sort(d, descending));
}

std::tuple<Tensor, Tensor> Tensor::topk(std::int64_t k, std::int64_t d, bool largest) const {
  MEMLENS_API_ENTRY();
  d = wrap_dim(d, std::max<std::int64_t>(dim(), 1));
  const std::int64_t n = dim() == 0 ? 1 : size(d);
  if (k < 0 || k > n) throw Error("selected index k out of range");
  auto [values, indices] = sort(d, largest);
  if (dim() == 0) return {values, indices};
  return {values.narrow(d, 0, k), indices.narrow(d, 0, k)};
}

}  // namespace memlens
