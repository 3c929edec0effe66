// Shape and view ops: new geometry over the same storage, never a copy (reshape and
// contiguous copy only when the strides leave no choice).
#include <algorithm>
#include <numeric>

#include "tensor_internal.hpp"

namespace memlens {

using namespace detail;
using autograd::Node;
using Grads = std::vector<Tensor>;

namespace {

// Resolves one -1 and checks the element count: PyTorch's infer_size.
Shape infer_size(Shape shape, std::int64_t numel) {
  std::int64_t known = 1;
  std::optional<std::size_t> infer;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer) throw ShapeError("only one dimension can be inferred");
      infer = i;
    } else if (shape[i] < 0) {
      throw ShapeError("invalid shape dimension " + std::to_string(shape[i]));
    } else {
      known *= shape[i];
    }
  }
  if (infer && known != 0 && numel % known == 0) shape[*infer] = numel / known;
  else if (infer || known != numel)
    throw ShapeError("shape '" + shape_str(shape) + "' is invalid for input of size " + std::to_string(numel));
  return shape;
}

// Strides that express `newshape` over memory laid out as (oldshape, oldstride), or none
// when a requested dim would span two non-contiguous chunks (ATen's computeStride).
std::optional<Shape> compute_stride(const Shape& oldshape, const Shape& oldstride, const Shape& newshape) {
  if (oldshape.empty()) return Shape(newshape.size(), 1);
  std::int64_t numel = numel_of(oldshape);
  if (numel == 0) return oldshape == newshape ? oldstride : contiguous_strides(newshape);
  Shape newstride(newshape.size(), 0);
  std::int64_t view_d = static_cast<std::int64_t>(newshape.size()) - 1;
  std::int64_t chunk_base_stride = oldstride.back();
  std::int64_t tensor_numel = 1, view_numel = 1;
  for (std::int64_t tensor_d = static_cast<std::int64_t>(oldshape.size()) - 1; tensor_d >= 0; --tensor_d) {
    tensor_numel *= oldshape[static_cast<std::size_t>(tensor_d)];
    if (tensor_d == 0 || (oldshape[static_cast<std::size_t>(tensor_d - 1)] != 1 &&
                          oldstride[static_cast<std::size_t>(tensor_d - 1)] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || newshape[static_cast<std::size_t>(view_d)] == 1)) {
        newstride[static_cast<std::size_t>(view_d)] = view_numel * chunk_base_stride;
        view_numel *= newshape[static_cast<std::size_t>(view_d)];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (tensor_d > 0) {
        chunk_base_stride = oldstride[static_cast<std::size_t>(tensor_d - 1)];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return newstride;
}

Tensor reshape_backward(const Tensor& g, const Shape& sizes) { return g.reshape(sizes); }

}  // namespace

namespace detail {
Tensor expand_alias(const Tensor& t, const Shape& shape) {
  if (t.sizes() == shape) return t;
  std::size_t n = shape.size(), k = static_cast<std::size_t>(t.dim());
  Shape strides(n, 0);
  for (std::size_t i = 0; i < k; ++i) {
    std::size_t j = n - k + i;
    if (t.sizes()[i] == shape[j]) strides[j] = t.strides()[i];
    else if (t.sizes()[i] != 1)
      throw ShapeError("The expanded size of the tensor (" + std::to_string(shape[j]) + ") must match the existing size (" +
                       std::to_string(t.sizes()[i]) + ") at non-singleton dimension " + std::to_string(j) +
                       ".  Target sizes: " + shape_str(shape) + ".  Tensor sizes: " + shape_str(t.sizes()));
  }
  return as_strided_alias(t, shape, strides, t.storage_offset());
}
}  // namespace detail

namespace {
// The view both `view` and `reshape` return once the strides are known.
Tensor view_as(const Tensor& self, Shape shape, Shape stride, instrument::ViewKind kind) {
  Tensor out = make_view(self, std::move(shape), std::move(stride), self.storage_offset(), kind);
  autograd::record(out, "ViewBackward0", {self},
                   [s = self.sizes()](const Tensor& g, const Node&) { return Grads{reshape_backward(g, s)}; });
  return out;
}
}  // namespace

Tensor Tensor::view(Shape shape) const {
  MEMLENS_API_ENTRY();
  shape = infer_size(std::move(shape), numel());
  auto stride = compute_stride(sizes(), strides(), shape);
  if (!stride)
    throw ShapeError(
        "view size is not compatible with input tensor's size and stride (at least one dimension spans across two "
        "contiguous subspaces). Use .reshape(...) instead. (input sizes " +
        shape_str(sizes()) + ", strides " + shape_str(strides()) + "; requested view " + shape_str(shape) + ")");
  return view_as(*this, std::move(shape), std::move(*stride), instrument::ViewKind::View);
}

// A view when the strides allow one (then it costs what view costs), else a copy.
Tensor Tensor::reshape(Shape shape) const {
  MEMLENS_API_ENTRY();
  shape = infer_size(std::move(shape), numel());
  if (auto stride = compute_stride(sizes(), strides(), shape))
    return view_as(*this, std::move(shape), std::move(*stride), instrument::ViewKind::Reshape);
  return clone_for(*this, instrument::CopyReason::Reshape).view(shape);
}

Tensor Tensor::flatten(std::int64_t start, std::int64_t end) const {
  MEMLENS_API_ENTRY();
  if (dim() == 0) return reshape({1});
  start = wrap_dim(start, dim());
  end = wrap_dim(end, dim());
  if (start > end) throw IndexError("flatten() has invalid args: start_dim cannot come after end_dim");
  Shape s(sizes().begin(), sizes().begin() + start);
  std::int64_t n = 1;
  for (std::int64_t i = start; i <= end; ++i) n *= sizes()[static_cast<std::size_t>(i)];
  s.push_back(n);
  s.insert(s.end(), sizes().begin() + end + 1, sizes().end());
  return reshape(s);
}

Tensor Tensor::permute(Shape dims) const {
  MEMLENS_API_ENTRY();
  if (static_cast<std::int64_t>(dims.size()) != dim())
    throw ShapeError(
        "permute(sparse_coo): number of dimensions in the tensor input does not match the length of the "
        "desired ordering of dimensions i.e. input.dim() = " +
        std::to_string(dim()) + " is not equal to len(dims) = " + std::to_string(dims.size()));
  Shape sz(dims.size()), st(dims.size()), inverse(dims.size());
  std::vector<bool> seen(dims.size(), false);
  for (std::size_t i = 0; i < dims.size(); ++i) {
    auto d = static_cast<std::size_t>(wrap_dim(dims[i], dim()));
    if (seen[d]) throw ShapeError("permute(): duplicate dims are not allowed.");
    seen[d] = true;
    sz[i] = sizes()[d];
    st[i] = strides()[d];
    inverse[d] = static_cast<std::int64_t>(i);
  }
  Tensor out = make_view(*this, sz, st, storage_offset(), instrument::ViewKind::Permute);
  autograd::record(out, "PermuteBackward0", {*this},
                   [inverse](const Tensor& g, const Node&) { return Grads{g.permute(inverse)}; });
  return out;
}

namespace {
// transpose and t(): one view, under the backward node's name PyTorch gives each.
Tensor transposed(const Tensor& t, std::int64_t d0, std::int64_t d1, const char* node) {
  d0 = wrap_dim(d0, t.dim());
  d1 = wrap_dim(d1, t.dim());
  Shape sz = t.sizes(), st = t.strides();
  if (t.dim() > 0) {
    std::swap(sz[static_cast<std::size_t>(d0)], sz[static_cast<std::size_t>(d1)]);
    std::swap(st[static_cast<std::size_t>(d0)], st[static_cast<std::size_t>(d1)]);
  }
  Tensor out = make_view(t, sz, st, t.storage_offset(), instrument::ViewKind::Transpose);
  autograd::record(out, node, {t}, [d0, d1](const Tensor& g, const Node&) { return Grads{g.transpose(d0, d1)}; });
  return out;
}
}  // namespace

Tensor Tensor::transpose(std::int64_t d0, std::int64_t d1) const {
  MEMLENS_API_ENTRY();
  return transposed(*this, d0, d1, "TransposeBackward0");
}

Tensor Tensor::t() const {
  MEMLENS_API_ENTRY();
  if (dim() > 2) throw ShapeError("t() expects a tensor with <= 2 dimensions, but self is " + std::to_string(dim()) + "D");
  return dim() < 2 ? transposed(*this, 0, 0, "TBackward0") : transposed(*this, 0, 1, "TBackward0");
}

Tensor Tensor::expand(Shape shape) const {
  MEMLENS_API_ENTRY();
  if (shape.size() < sizes().size())
    throw ShapeError("expand: the number of sizes provided (" + std::to_string(shape.size()) +
                     ") must be greater or equal to the number of dimensions in the tensor (" + std::to_string(dim()) + ")");
  std::size_t lead = shape.size() - sizes().size();
  for (std::size_t i = 0; i < shape.size(); ++i)
    if (shape[i] == -1) {
      if (i < lead)
        throw ShapeError("The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension " +
                         std::to_string(i));
      shape[i] = sizes()[i - lead];
    }
  Tensor alias = expand_alias(*this, shape);
  Tensor out = make_view(*this, shape, alias.strides(), storage_offset(), instrument::ViewKind::Expand);
  autograd::record(out, "ExpandBackward0", {*this},
                   [s = sizes()](const Tensor& g, const Node&) { return Grads{autograd::sum_to(g, s)}; });
  return out;
}

Tensor Tensor::expand_as(const Tensor& other) const {
  MEMLENS_API_ENTRY();
  return expand(other.sizes());
}

Tensor Tensor::squeeze() const {
  MEMLENS_API_ENTRY();
  Shape s;
  for (auto v : sizes())
    if (v != 1) s.push_back(v);
  return view(s);
}

Tensor Tensor::squeeze(std::int64_t d) const {
  MEMLENS_API_ENTRY();
  d = wrap_dim(d, dim());
  if (dim() == 0 || sizes()[static_cast<std::size_t>(d)] != 1) return view(sizes());
  Shape s = sizes();
  s.erase(s.begin() + d);
  return view(s);
}

Tensor Tensor::unsqueeze(std::int64_t d) const {
  MEMLENS_API_ENTRY();
  d = wrap_dim(d, dim() + 1);
  Shape sz = sizes(), st = strides();
  std::int64_t stride = d < dim() ? sz[static_cast<std::size_t>(d)] * st[static_cast<std::size_t>(d)] : 1;
  sz.insert(sz.begin() + d, 1);
  st.insert(st.begin() + d, stride);
  Tensor out = make_view(*this, sz, st, storage_offset(), instrument::ViewKind::Unsqueeze);
  autograd::record(out, "UnsqueezeBackward0", {*this}, [d](const Tensor& g, const Node&) { return Grads{g.squeeze(d)}; });
  return out;
}

Tensor Tensor::slice(std::int64_t d, std::optional<std::int64_t> start, std::optional<std::int64_t> end,
                     std::int64_t step) const {
  MEMLENS_API_ENTRY();
  if (dim() == 0) throw IndexError("slice() cannot be applied to a 0-dim tensor.");
  d = wrap_dim(d, dim());
  if (step <= 0) throw IndexError("slice step must be positive");
  std::int64_t n = sizes()[static_cast<std::size_t>(d)];
  std::int64_t s = start.value_or(0), e = end.value_or(n);
  if (s < 0) s += n;
  if (e < 0) e += n;
  s = std::clamp<std::int64_t>(s, 0, n);
  e = std::clamp<std::int64_t>(e, s, n);
  Shape sz = sizes(), st = strides();
  sz[static_cast<std::size_t>(d)] = (e - s + step - 1) / step;
  std::int64_t offset = storage_offset() + s * st[static_cast<std::size_t>(d)];
  st[static_cast<std::size_t>(d)] *= step;
  Tensor out = make_view(*this, sz, st, offset, instrument::ViewKind::Slice);
  autograd::record(out, "SliceBackward0", {*this}, [in = sizes(), d, s, e, step](const Tensor& g, const Node&) {
    Tensor gi = zeros(in, TensorOptions(g.dtype()).device(g.device()));
    detail::copy_into(gi.slice(d, s, e, step), g);
    return Grads{gi};
  });
  return out;
}

Tensor Tensor::narrow(std::int64_t d, std::int64_t start, std::int64_t length) const {
  MEMLENS_API_ENTRY();
  d = wrap_dim(d, dim());
  std::int64_t n = size(d);
  if (start < 0) start += n;
  if (start < 0 || length < 0 || start + length > n)
    throw Error("start (" + std::to_string(start) + ") + length (" + std::to_string(length) +  // a RuntimeError in PyTorch
                ") exceeds dimension size (" + std::to_string(n) + ").");
  return slice(d, start, start + length);
}

Tensor Tensor::select(std::int64_t d, std::int64_t index) const {
  MEMLENS_API_ENTRY();
  if (dim() == 0) throw IndexError("select() cannot be applied to a 0-dim tensor.");
  d = wrap_dim(d, dim());
  std::int64_t n = sizes()[static_cast<std::size_t>(d)];
  if (index < -n || index >= n)
    throw IndexError("index " + std::to_string(index) + " is out of bounds for dimension " + std::to_string(d) + " with size " +
                     std::to_string(n));
  if (index < 0) index += n;
  Shape sz = sizes(), st = strides();
  std::int64_t offset = storage_offset() + index * st[static_cast<std::size_t>(d)];
  sz.erase(sz.begin() + d);
  st.erase(st.begin() + d);
  Tensor out = make_view(*this, sz, st, offset, instrument::ViewKind::Select);
  autograd::record(out, "SelectBackward0", {*this}, [in = sizes(), d, index](const Tensor& g, const Node&) {
    Tensor gi = zeros(in, TensorOptions(g.dtype()).device(g.device()));
    detail::copy_into(gi.select(d, index), g);
    return Grads{gi};
  });
  return out;
}

Tensor Tensor::diagonal(std::int64_t offset, std::int64_t d0, std::int64_t d1) const {
  MEMLENS_API_ENTRY();
  d0 = wrap_dim(d0, dim());
  d1 = wrap_dim(d1, dim());
  if (d0 == d1) throw ShapeError("diagonal dimensions cannot be identical " + std::to_string(d0) + ", " + std::to_string(d1));
  auto u0 = static_cast<std::size_t>(d0), u1 = static_cast<std::size_t>(d1);
  std::int64_t len = offset >= 0 ? std::min(sizes()[u0], sizes()[u1] - offset) : std::min(sizes()[u0] + offset, sizes()[u1]);
  len = std::max<std::int64_t>(len, 0);
  std::int64_t start = storage_offset() + (offset >= 0 ? offset * strides()[u1] : -offset * strides()[u0]);
  Shape sz, st;
  for (std::size_t i = 0; i < sizes().size(); ++i)
    if (i != u0 && i != u1) {
      sz.push_back(sizes()[i]);
      st.push_back(strides()[i]);
    }
  sz.push_back(len);
  st.push_back(strides()[u0] + strides()[u1]);
  Tensor out = make_view(*this, sz, st, start, instrument::ViewKind::Diagonal);
  autograd::record(out, "DiagonalBackward0", {*this}, [in = sizes(), offset, d0, d1](const Tensor& g, const Node&) {
    Tensor gi = zeros(in, TensorOptions(g.dtype()).device(g.device()));
    detail::copy_into(gi.diagonal(offset, d0, d1), g);
    return Grads{gi};
  });
  return out;
}

Tensor Tensor::detach() const {
  MEMLENS_API_ENTRY();
  // Shares storage and version counter, but is a fresh leaf: in-place on it is allowed.
  Tensor d = as_strided_alias(*this, sizes(), strides(), storage_offset());
  emit_view(d, instrument::ViewKind::Detach);
  return d;
}

}  // namespace memlens
