// The free-function and operator spellings of the tensor methods (a + b, exp(a), a += b):
// each forwards to its method, so the op, its event and its gradient live in one place.
#include "memlens/tensor/tensor.hpp"
#include "memlens/tensor/instrument.hpp"

namespace memlens {

Tensor operator+(const Tensor& a, const Tensor& b) {
  MEMLENS_API_ENTRY();
  return a.add(b);
}
Tensor operator-(const Tensor& a, const Tensor& b) {
  MEMLENS_API_ENTRY();
  return a.sub(b);
}
Tensor operator*(const Tensor& a, const Tensor& b) {
  MEMLENS_API_ENTRY();
  return a.mul(b);
}
Tensor operator/(const Tensor& a, const Tensor& b) {
  MEMLENS_API_ENTRY();
  return a.div(b);
}
Tensor operator+(const Tensor& a, Scalar b) {
  MEMLENS_API_ENTRY();
  return a.add(b);
}
Tensor operator-(const Tensor& a, Scalar b) {
  MEMLENS_API_ENTRY();
  return a.sub(b);
}
Tensor operator*(const Tensor& a, Scalar b) {
  MEMLENS_API_ENTRY();
  return a.mul(b);
}
Tensor operator/(const Tensor& a, Scalar b) {
  MEMLENS_API_ENTRY();
  return a.div(b);
}
Tensor operator+(Scalar a, const Tensor& b) {
  MEMLENS_API_ENTRY();
  return b.add(a);
}
Tensor operator*(Scalar a, const Tensor& b) {
  MEMLENS_API_ENTRY();
  return b.mul(a);
}
Tensor operator-(const Tensor& a) {
  MEMLENS_API_ENTRY();
  return a.neg();
}
Tensor operator==(const Tensor& a, const Tensor& b) {
  MEMLENS_API_ENTRY();
  return a.eq(b);
}
Tensor operator!=(const Tensor& a, const Tensor& b) {
  MEMLENS_API_ENTRY();
  return a.ne(b);
}
Tensor operator<(const Tensor& a, const Tensor& b) {
  MEMLENS_API_ENTRY();
  return a.lt(b);
}
Tensor operator<=(const Tensor& a, const Tensor& b) {
  MEMLENS_API_ENTRY();
  return a.le(b);
}
Tensor operator>(const Tensor& a, const Tensor& b) {
  MEMLENS_API_ENTRY();
  return a.gt(b);
}
Tensor operator>=(const Tensor& a, const Tensor& b) {
  MEMLENS_API_ENTRY();
  return a.ge(b);
}
Tensor operator==(const Tensor& a, Scalar b) {
  MEMLENS_API_ENTRY();
  return a.eq(b);
}
Tensor operator!=(const Tensor& a, Scalar b) {
  MEMLENS_API_ENTRY();
  return a.ne(b);
}
Tensor operator<(const Tensor& a, Scalar b) {
  MEMLENS_API_ENTRY();
  return a.lt(b);
}
Tensor operator<=(const Tensor& a, Scalar b) {
  MEMLENS_API_ENTRY();
  return a.le(b);
}
Tensor operator>(const Tensor& a, Scalar b) {
  MEMLENS_API_ENTRY();
  return a.gt(b);
}
Tensor operator>=(const Tensor& a, Scalar b) {
  MEMLENS_API_ENTRY();
  return a.ge(b);
}
Tensor& operator+=(Tensor& a, const Tensor& b) {
  MEMLENS_API_ENTRY();
  return a.add_(b);
}
Tensor& operator-=(Tensor& a, const Tensor& b) {
  MEMLENS_API_ENTRY();
  return a.sub_(b);
}
Tensor& operator*=(Tensor& a, const Tensor& b) {
  MEMLENS_API_ENTRY();
  return a.mul_(b);
}
Tensor& operator/=(Tensor& a, const Tensor& b) {
  MEMLENS_API_ENTRY();
  return a.div_(b);
}
Tensor& operator+=(Tensor& a, Scalar b) {
  MEMLENS_API_ENTRY();
  return a.add_(b);
}
Tensor& operator-=(Tensor& a, Scalar b) {
  MEMLENS_API_ENTRY();
  return a.sub_(b);
}
Tensor& operator*=(Tensor& a, Scalar b) {
  MEMLENS_API_ENTRY();
  return a.mul_(b);
}
Tensor& operator/=(Tensor& a, Scalar b) {
  MEMLENS_API_ENTRY();
  return a.div_(b);
}
Tensor& operator+=(Tensor&& a, const Tensor& b) {
  MEMLENS_API_ENTRY();
  return a.add_(b);
}
Tensor& operator+=(Tensor&& a, Scalar b) {
  MEMLENS_API_ENTRY();
  return a.add_(b);
}

Tensor add(const Tensor& a, const Tensor& b) {
  MEMLENS_API_ENTRY();
  return a.add(b);
}
Tensor sub(const Tensor& a, const Tensor& b) {
  MEMLENS_API_ENTRY();
  return a.sub(b);
}
Tensor mul(const Tensor& a, const Tensor& b) {
  MEMLENS_API_ENTRY();
  return a.mul(b);
}
Tensor div(const Tensor& a, const Tensor& b) {
  MEMLENS_API_ENTRY();
  return a.div(b);
}
Tensor pow(const Tensor& a, Scalar e) {
  MEMLENS_API_ENTRY();
  return a.pow(e);
}
Tensor exp(const Tensor& a) {
  MEMLENS_API_ENTRY();
  return a.exp();
}
Tensor log(const Tensor& a) {
  MEMLENS_API_ENTRY();
  return a.log();
}
Tensor sqrt(const Tensor& a) {
  MEMLENS_API_ENTRY();
  return a.sqrt();
}
Tensor abs(const Tensor& a) {
  MEMLENS_API_ENTRY();
  return a.abs();
}
Tensor relu(const Tensor& a) {
  MEMLENS_API_ENTRY();
  return a.relu();
}
Tensor sigmoid(const Tensor& a) {
  MEMLENS_API_ENTRY();
  return a.sigmoid();
}
Tensor tanh(const Tensor& a) {
  MEMLENS_API_ENTRY();
  return a.tanh();
}
Tensor erf(const Tensor& a) {
  MEMLENS_API_ENTRY();
  return a.erf();
}
Tensor sin(const Tensor& a) {
  MEMLENS_API_ENTRY();
  return a.sin();
}
Tensor cos(const Tensor& a) {
  MEMLENS_API_ENTRY();
  return a.cos();
}

}  // namespace memlens
