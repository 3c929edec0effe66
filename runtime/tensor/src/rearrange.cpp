// Whole slices joined, taken apart and moved: cat, stack, split, chunk, unbind, flip,
// roll, repeat. Each is built of copies or views, so its memory is theirs.
#include "tensor_internal.hpp"

namespace memlens {

using namespace detail;
using autograd::Node;
using Grads = std::vector<Tensor>;

Tensor cat(const std::vector<Tensor>& tensors, std::int64_t d) {
  MEMLENS_API_ENTRY();
  if (tensors.empty()) throw Error("torch.cat(): expected a non-empty list of Tensors");
  const Tensor& first = tensors[0];
  d = wrap_dim(d, first.dim());
  Shape shape = first.sizes();
  shape[static_cast<std::size_t>(d)] = 0;
  ScalarType dt = first.dtype();
  for (auto& t : tensors) {
    check_same_device(first, t, "cat");
    if (t.dim() != first.dim())
      throw ShapeError("Tensors must have same number of dimensions: got " + std::to_string(first.dim()) + " and " +
                       std::to_string(t.dim()));
    for (std::int64_t i = 0; i < t.dim(); ++i)
      if (i != d && t.size(i) != first.size(i))
        throw ShapeError("Sizes of tensors must match except in dimension " + std::to_string(d) + ". Expected size " +
                         std::to_string(first.size(i)) + " but got size " + std::to_string(t.size(i)) +
                         " for tensor number 1 in the list.");
    shape[static_cast<std::size_t>(d)] += t.size(d);
    dt = promote_types(dt, t.dtype());
  }
  Tensor out = make_tensor(shape, dt, first.device());
  std::vector<std::int64_t> lengths;
  std::int64_t at = 0;
  for (auto& t : tensors) {
    copy_into(as_strided_alias(out, out.sizes(), out.strides(), 0).narrow(d, at, t.size(d)), t);
    lengths.push_back(t.size(d));
    at += t.size(d);
  }
  autograd::record(out, "CatBackward0", tensors, [d, lengths](const Tensor& g, const Node&) {
    Grads grads;
    std::int64_t pos = 0;
    for (auto len : lengths) {
      grads.push_back(g.narrow(d, pos, len));
      pos += len;
    }
    return grads;
  });
  return out;
}

Tensor stack(const std::vector<Tensor>& tensors, std::int64_t d) {
  MEMLENS_API_ENTRY();
  if (tensors.empty()) throw Error("stack expects a non-empty TensorList");
  d = wrap_dim(d, tensors[0].dim() + 1);
  for (const Tensor& t : tensors)
    if (t.sizes() != tensors[0].sizes())
      throw ShapeError("stack expects each tensor to be equal size, but got " + shape_str(tensors[0].sizes()) +
                       " at entry 0 and " + shape_str(t.sizes()) + " at another entry");
  std::vector<Tensor> parts;
  for (const Tensor& t : tensors) parts.push_back(t.unsqueeze(d));
  return cat(parts, d);
}

std::vector<Tensor> Tensor::split(std::int64_t piece, std::int64_t d) const {
  MEMLENS_API_ENTRY();
  d = wrap_dim(d, dim());
  if (piece < 1) throw Error("split expects split_size be positive, but got split_size=" + std::to_string(piece));
  std::vector<Tensor> out;
  for (std::int64_t at = 0; at < size(d) || (at == 0 && size(d) == 0); at += piece) {
    out.push_back(narrow(d, at, std::min(piece, size(d) - at)));
    if (size(d) == 0) break;
  }
  return out;
}

std::vector<Tensor> Tensor::split(const Shape& sizes_along, std::int64_t d) const {
  MEMLENS_API_ENTRY();
  d = wrap_dim(d, dim());
  std::int64_t total = 0;
  for (std::int64_t n : sizes_along) total += n;
  if (total != size(d) || std::any_of(sizes_along.begin(), sizes_along.end(), [](std::int64_t n) { return n < 0; }))
    throw Error("split_with_sizes expects split_sizes to sum exactly to " + std::to_string(size(d)) +
                " (input tensor's size at dimension " + std::to_string(d) + "), but got split_sizes=" + shape_str(sizes_along));
  std::vector<Tensor> out;
  std::int64_t at = 0;
  for (std::int64_t n : sizes_along) out.push_back(narrow(d, at, n)), at += n;
  return out;
}

std::vector<Tensor> Tensor::chunk(std::int64_t chunks, std::int64_t d) const {
  MEMLENS_API_ENTRY();
  if (chunks < 1) throw Error("chunk expects `chunks` to be greater than 0, got: " + std::to_string(chunks));
  d = wrap_dim(d, dim());
  return split(std::max<std::int64_t>(1, (size(d) + chunks - 1) / chunks), d);
}

std::vector<Tensor> Tensor::unbind(std::int64_t d) const {
  MEMLENS_API_ENTRY();
  d = wrap_dim(d, dim());
  std::vector<Tensor> out;
  for (std::int64_t i = 0; i < size(d); ++i) out.push_back(select(d, i));
  return out;
}

Tensor Tensor::flip(Shape dims) const {
  MEMLENS_API_ENTRY();
  Tensor out = *this;
  for (std::int64_t d : dims) {
    d = wrap_dim(d, dim());
    out = out.index_select(d, arange(size(d) - 1, -1, -1, TensorOptions().dtype(kInt64).device(device())));
  }
  return dims.empty() ? clone() : out;
}

Tensor Tensor::roll(std::int64_t shift, std::int64_t d) const {
  MEMLENS_API_ENTRY();
  d = wrap_dim(d, dim());
  const std::int64_t n = size(d);
  const std::int64_t s = n == 0 ? 0 : ((shift % n) + n) % n;
  if (s == 0) return clone();
  return cat({narrow(d, n - s, s), narrow(d, 0, n - s)}, d);
}

Tensor Tensor::repeat(Shape repeats) const {
  MEMLENS_API_ENTRY();
  if (static_cast<std::int64_t>(repeats.size()) < dim())
    throw ShapeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor");
  // [s0, s1] repeated [r0, r1]: viewed as [1, s0, 1, s1], expanded to [r0, s0, r1, s1], then merged.
  Shape padded(repeats.size() - static_cast<std::size_t>(dim()), 1);
  padded.insert(padded.end(), sizes().begin(), sizes().end());
  Shape spread, expanded, result;
  for (std::size_t i = 0; i < repeats.size(); ++i) {
    if (repeats[i] < 0) throw ShapeError("Trying to create tensor with negative dimension " + std::to_string(repeats[i]));
    spread.insert(spread.end(), {1, padded[i]});
    expanded.insert(expanded.end(), {repeats[i], padded[i]});
    result.push_back(repeats[i] * padded[i]);
  }
  return reshape(padded).reshape(spread).expand(expanded).reshape(result);
}

}  // namespace memlens
