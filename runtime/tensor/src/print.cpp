// PyTorch's tensor repr: same number formats (integer-valued floats as "1.", fixed 4
// decimals, scientific when the range is wide), line wrapping and summarisation.
#include <cmath>
#include <cstdio>
#include <ostream>

#include "memlens/tensor/autograd.hpp"
#include "tensor_internal.hpp"

namespace memlens {

using namespace detail;

namespace {

constexpr std::int64_t kThreshold = 1000, kEdgeItems = 3, kLineWidth = 80;

struct Formatter {
  ScalarType dtype;
  bool int_mode = true, sci = false;
  std::size_t width = 1;

  std::string format(double v) const {
    char buf[64];
    if (dtype == kBool) return v != 0 ? "True" : "False";
    if (!is_floating_point(dtype)) {
      std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
      return buf;
    }
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    if (sci) std::snprintf(buf, sizeof buf, "%.4e", v);
    else if (int_mode) std::snprintf(buf, sizeof buf, "%.0f.", v);
    else std::snprintf(buf, sizeof buf, "%.4f", v);
    return buf;
  }
  std::string padded(double v) const {
    std::string s = format(v);
    return std::string(width > s.size() ? width - s.size() : 0, ' ') + s;
  }
};

// Values shown (all of them, or the edges when summarising), in order.
void collect(const Tensor& t, Shape& idx, std::size_t d, bool summarize, std::vector<double>& out) {
  if (d == idx.size()) {
    out.push_back(read_double(t, idx));
    return;
  }
  std::int64_t n = t.sizes()[d];
  for (std::int64_t i = 0; i < n; ++i) {
    if (summarize && n > 2 * kEdgeItems && i == kEdgeItems) i = n - kEdgeItems;
    idx[d] = i;
    collect(t, idx, d + 1, summarize, out);
  }
}

Formatter make_formatter(const Tensor& t, bool summarize) {
  Formatter f{t.dtype()};
  std::vector<double> values;
  Shape idx(static_cast<std::size_t>(t.dim()), 0);
  if (t.numel() > 0) collect(t, idx, 0, summarize, values);
  if (t.is_floating_point()) {
    double lo = INFINITY, hi = 0;
    for (double v : values) {
      if (!std::isfinite(v)) continue;
      if (v != std::ceil(v)) f.int_mode = false;
      if (v != 0) {
        lo = std::min(lo, std::fabs(v));
        hi = std::max(hi, std::fabs(v));
      }
    }
    if (hi > 0) {
      if (f.int_mode) f.sci = hi / lo > 1000 || hi > 1e8;
      else f.sci = hi / lo > 1000 || hi > 1e8 || lo < 1e-4;
    }
  }
  for (double v : values) f.width = std::max(f.width, f.format(v).size());
  return f;
}

void render(const Tensor& t, Shape& idx, std::size_t d, const Formatter& f, bool summarize, std::size_t indent,
            std::string& out) {
  std::int64_t n = t.sizes()[d];
  out += '[';
  if (d + 1 == idx.size()) {
    std::size_t per_line = std::max<std::size_t>(1, (kLineWidth - indent) / (f.width + 2));
    std::size_t on_line = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      if (i > 0) {
        out += ',';
        if (++on_line == per_line) {
          out += '\n' + std::string(indent + 1, ' ');
          on_line = 0;
        } else {
          out += ' ';
        }
      }
      if (summarize && n > 2 * kEdgeItems && i == kEdgeItems) {
        out += " ..., ";
        i = n - kEdgeItems;
      }
      idx[d] = i;
      out += f.padded(read_double(t, idx));
    }
  } else {
    std::string sep = "," + std::string(idx.size() - d - 1, '\n') + std::string(indent + 1, ' ');
    for (std::int64_t i = 0; i < n; ++i) {
      if (i > 0) out += sep;
      if (summarize && n > 2 * kEdgeItems && i == kEdgeItems) {
        out += "..." + sep;
        i = n - kEdgeItems;
      }
      idx[d] = i;
      render(t, idx, d + 1, f, summarize, indent + 1, out);
    }
  }
  out += ']';
}

}  // namespace

std::string Tensor::toString() const {
  if (!defined()) return "tensor(undefined)";
  std::string out = "tensor(";
  bool summarize = numel() > kThreshold;
  // A GPU tensor's values come over in one transfer, not one element at a time.
  Tensor values = *this;
  if (detail::on_gpu(*this)) {
    NoGradGuard no_grad;
    values = to(kCPU);
  }
  Formatter f = make_formatter(values, summarize);
  if (dim() == 0) {
    out += f.format(read_double(values, {}));
  } else if (numel() == 0) {
    out += "[]";
  } else {
    Shape idx(static_cast<std::size_t>(dim()), 0);
    render(values, idx, 0, f, summarize, 7, out);
  }
  std::vector<std::string> suffix;
  if (numel() == 0 && dim() != 1) {
    std::string s = "size=(";
    for (std::size_t i = 0; i < sizes().size(); ++i) s += (i ? ", " : "") + std::to_string(sizes()[i]);
    suffix.push_back(s + (sizes().size() == 1 ? ",)" : ")"));
  }
  if (!device().is_cpu()) suffix.push_back("device='" + device().str() + "'");
  // PyTorch names every dtype but its defaults (float32; int64 and bool, which print as such).
  bool shown = dtype() != kFloat32 && dtype() != kInt64 && dtype() != kBool;
  if (shown || (numel() == 0 && dtype() != kFloat32)) suffix.push_back("dtype=" + std::string(dtype_repr(dtype())));
  if (auto fn = grad_fn()) suffix.push_back("grad_fn=<" + fn->name() + ">");
  else if (requires_grad()) suffix.push_back("requires_grad=True");
  for (auto& s : suffix) out += ", " + s;
  return out + ")";
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.toString(); }

}  // namespace memlens
