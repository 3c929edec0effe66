// Advanced indexing: see advanced_index.hpp.
#include "advanced_index.hpp"

#include <algorithm>
#include <cstring>

#include "tensor_internal.hpp"

namespace memlens::detail {

AdvancedIndex::AdvancedIndex(const Tensor& self, const std::vector<std::pair<std::int64_t, Tensor>>& indices)
    : self_sizes_(self.sizes()) {
  // Masks become the coordinates of their true elements, one int64 tensor per dim.
  std::vector<std::pair<std::int64_t, Tensor>> positions;
  for (const auto& [d, index] : indices) {
    check_same_device(self, index, "index");
    if (index.dtype() == kBool || index.dtype() == kUInt8) {
      for (std::int64_t j = 0; j < index.dim(); ++j)
        if (index.size(j) != self.size(d + j))
          throw IndexError("The shape of the mask " + shape_str(index.sizes()) + " at index " + std::to_string(j) +
                           " does not match the shape of the indexed tensor " + shape_str(self.sizes()) + " at index " +
                           std::to_string(d + j));
      Tensor nz = index.ne(0).nonzero();
      for (std::int64_t j = 0; j < index.dim(); ++j) positions.emplace_back(d + j, nz.select(1, j));
    } else if (index.dtype() == kInt64 || index.dtype() == kInt32) {
      positions.emplace_back(d, index.to(kInt64));
    } else {
      throw IndexError("tensors used as indices must be long, int, byte or bool tensors (got " +
                       std::string(type_name(index.dtype())) + ")");
    }
  }
  Shape shape = positions.front().second.sizes();
  for (const auto& p : positions) {
    try {
      shape = broadcast_shapes(shape, p.second.sizes());
    } catch (const ShapeError&) {
      std::string shapes;
      for (const auto& q : positions) shapes += (shapes.empty() ? "" : ", ") + shape_str(q.second.sizes());
      throw IndexError("shape mismatch: indexing tensors could not be broadcast together with shapes " + shapes);
    }
  }
  index_shape_ = shape;
  for (const auto& [d, index] : positions) {
    Tensor flat = expand_alias(index, shape).contiguous();
    if (on_gpu(flat)) flat = transfer_copy(flat, kCPU);  // the positions are worked out on the host
    const auto* p = static_cast<const std::int64_t*>(flat.raw_data());
    const std::int64_t n = self.size(d);
    std::vector<std::int64_t> at(p, p + flat.numel());
    for (auto& i : at) {
      if (i < -n || i >= n)
        throw IndexError("index " + std::to_string(i) + " is out of bounds for dimension " + std::to_string(d) + " with size " +
                         std::to_string(n));
      if (i < 0) i += n;
    }
    dims_.push_back(d);
    at_.push_back(std::move(at));
  }
  bool adjacent = true;
  for (std::size_t j = 1; j < dims_.size(); ++j) adjacent = adjacent && dims_[j] == dims_[j - 1] + 1;
  for (std::int64_t d = 0; d < self.dim(); ++d)
    if (std::find(dims_.begin(), dims_.end(), d) == dims_.end()) rest_dims_.push_back(d);
  result_pos_ = adjacent ? dims_.front() : 0;
  for (std::size_t j = 0; j < rest_dims_.size(); ++j) {
    if (static_cast<std::int64_t>(j) == result_pos_) result_shape_.insert(result_shape_.end(), shape.begin(), shape.end());
    result_shape_.push_back(self.size(rest_dims_[j]));
  }
  if (result_pos_ == static_cast<std::int64_t>(rest_dims_.size()))
    result_shape_.insert(result_shape_.end(), shape.begin(), shape.end());
}

Tensor AdvancedIndex::index_dims_first(const Tensor& values) const {
  Shape sizes = index_shape_, strides;
  const auto k = static_cast<std::int64_t>(index_shape_.size());
  for (std::int64_t i = 0; i < k; ++i) strides.push_back(values.stride(result_pos_ + i));
  for (std::int64_t j = 0; j < static_cast<std::int64_t>(rest_dims_.size()); ++j) {
    std::int64_t d = j < result_pos_ ? j : j + k;
    sizes.push_back(values.size(d));
    strides.push_back(values.stride(d));
  }
  return as_strided_alias(values, sizes, strides, values.storage_offset());
}

template <class F>
void AdvancedIndex::for_each_position(const Tensor& t, F&& f) const {
  const std::size_t count = at_.empty() ? 0 : at_.front().size();
  for (std::size_t b = 0; b < count; ++b) {
    std::int64_t offset = t.storage_offset();
    for (std::size_t j = 0; j < dims_.size(); ++j) offset += at_[j][b] * t.stride(dims_[j]);
    f(static_cast<std::int64_t>(b), offset);
  }
}

namespace {
// The part of `t` an index element selects: its rest dims, from `offset`.
Tensor rest_of(const Tensor& t, const std::vector<std::int64_t>& rest_dims, std::int64_t offset) {
  Shape sizes, strides;
  for (auto d : rest_dims) {
    sizes.push_back(t.size(d));
    strides.push_back(t.stride(d));
  }
  return as_strided_alias(t, sizes, strides, offset);
}
}  // namespace

std::int64_t AdvancedIndex::slice_offset(const Tensor& dims_first, std::int64_t b) const {
  std::int64_t offset = dims_first.storage_offset();
  for (std::size_t i = index_shape_.size(); i-- > 0;) {
    offset += (b % index_shape_[i]) * dims_first.strides()[i];
    b /= index_shape_[i];
  }
  return offset;
}

Tensor AdvancedIndex::slice_of(const Tensor& dims_first, std::int64_t b) const {
  const auto k = static_cast<std::ptrdiff_t>(index_shape_.size());
  return as_strided_alias(dims_first, Shape(dims_first.sizes().begin() + k, dims_first.sizes().end()),
                          Shape(dims_first.strides().begin() + k, dims_first.strides().end()), slice_offset(dims_first, b));
}

Tensor AdvancedIndex::offsets_on(const Tensor& t) const {
  Tensor offsets = make_tensor({static_cast<std::int64_t>(at_.empty() ? 0 : at_.front().size())}, kInt64, kCPU);
  auto* p = offsets.data_ptr<std::int64_t>();
  for_each_position(t, [&](std::int64_t b, std::int64_t offset) { p[b] = offset; });
  return transfer_copy(offsets, t.device());
}

Tensor AdvancedIndex::gather(const Tensor& self) const {
  Tensor out = make_tensor(result_shape_, self.dtype(), self.device());
  Tensor dst = index_dims_first(out);
  if (on_gpu(self)) {
    gpu().take(dst, static_cast<std::int64_t>(index_shape_.size()), rest_of(self, rest_dims_, 0), offsets_on(self), 1, 0);
    return out;
  }
  if (rest_dims_.empty()) {  // one element per index element: no tensor per element
    const std::size_t es = self.element_size();
    char* o = data_bytes(out) - out.storage_offset() * static_cast<std::int64_t>(es);
    const char* s = data_bytes(self) - self.storage_offset() * static_cast<std::int64_t>(es);
    for_each_position(self, [&](std::int64_t b, std::int64_t offset) {
      std::memcpy(o + slice_offset(dst, b) * static_cast<std::int64_t>(es), s + offset * static_cast<std::int64_t>(es), es);
    });
    return out;
  }
  for_each_position(self,
                    [&](std::int64_t b, std::int64_t offset) { copy_into(slice_of(dst, b), rest_of(self, rest_dims_, offset)); });
  return out;
}

void AdvancedIndex::put(const Tensor& self, const Tensor& values, bool accumulate) const {
  Tensor src = index_dims_first(values);
  if (on_gpu(self)) {
    gpu().put(rest_of(self, rest_dims_, 0), offsets_on(self), 1, 0, src, static_cast<std::int64_t>(index_shape_.size()),
              accumulate);
    return;
  }
  for_each_position(self, [&](std::int64_t b, std::int64_t offset) {
    Tensor part = rest_of(self, rest_dims_, offset);
    if (accumulate) accumulate_into(part, slice_of(src, b));
    else copy_into(part, slice_of(src, b));
  });
}

}  // namespace memlens::detail
