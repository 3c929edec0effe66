#pragma once
// Values by report site id. Site ids are dense from 0 (SiteTable hands them out in order),
// so a vector grown on first touch replaces a hash map on the pass's hottest paths.
#include <cstdint>
#include <vector>

#include "memlens/analysis/report.hpp"

namespace memlens::analysis {

template <class T>
class PerSite {
 public:
  T& operator[](SiteId s) {
    if (s >= values_.size()) values_.resize(s + std::size_t{1});
    return values_[s];
  }
  // The value of site s, T{} when it was never touched.
  T get(SiteId s) const { return s < values_.size() ? values_[s] : T{}; }
  const T& at(SiteId s) const { return values_.at(s); }  // s < size()
  // Sites 0 .. size()-1 may have values.
  SiteId size() const { return static_cast<SiteId>(values_.size()); }

 private:
  std::vector<T> values_;
};

}  // namespace memlens::analysis
