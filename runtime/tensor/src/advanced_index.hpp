#pragma once
// Advanced indexing: index tensors (int64 positions, or bool masks) on several dims at
// once, read (`t.index({a, b})`) and written (`index_put_`), with PyTorch's result layout.
#include <cstdint>
#include <utility>
#include <vector>

#include "memlens/tensor/tensor.hpp"

namespace memlens::detail {

class AdvancedIndex {
 public:
  // `indices`: (dim of `self`, index tensor) in dim order. A bool mask of n dims covers n
  // dims from its own and stands for the positions of its true elements; int64 indices
  // count negatives from the end. The index tensors broadcast together.
  AdvancedIndex(const Tensor& self, const std::vector<std::pair<std::int64_t, Tensor>>& indices);

  // The indexed elements as a new tensor of result_shape() (no autograd).
  Tensor gather(const Tensor& self) const;
  // Writes (or with `accumulate`, adds) `values`, of result_shape(), at the indexed
  // positions of `self` (no autograd, no version bump).
  void put(const Tensor& self, const Tensor& values, bool accumulate) const;
  const Shape& result_shape() const { return result_shape_; }

 private:
  // `values` (result-shaped) as an alias laid out index dims first, then the rest.
  Tensor index_dims_first(const Tensor& values) const;
  // Where index element b's slice starts in a tensor laid out index dims first, and that
  // slice (the rest dims) as an alias.
  std::int64_t slice_offset(const Tensor& dims_first, std::int64_t b) const;
  Tensor slice_of(const Tensor& dims_first, std::int64_t b) const;
  // Each index element's storage offset in `t`, as an int64 tensor on t's device.
  Tensor offsets_on(const Tensor& t) const;
  // Calls f(b, offset) for each index element b, with its storage offset in `t`.
  template <class F>
  void for_each_position(const Tensor& t, F&& f) const;

  Shape self_sizes_;
  Shape index_shape_;                          // the index tensors' broadcast shape
  std::vector<std::int64_t> dims_;             // the dims of self they address
  std::vector<std::vector<std::int64_t>> at_;  // per addressed dim, each index element's coordinate
  std::vector<std::int64_t> rest_dims_;        // self's other dims, kept whole
  // Where the index dims stand in the result: in place of the addressed dims when those
  // are adjacent, else first (NumPy's rule, which PyTorch follows).
  std::int64_t result_pos_ = 0;
  Shape result_shape_;
};

}  // namespace memlens::detail
