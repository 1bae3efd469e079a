#include "rill/shape.h"

#include "rill/error.h"

namespace rill {

int64_t NumElements(const Shape& shape) {
  return DimProduct(shape, 0, static_cast<int>(shape.size()));
}

int64_t DimProduct(const Shape& shape, int begin, int end) {
  int64_t n = 1;
  for (int i = begin; i < end; ++i) {
    RILL_CHECK(shape[i] >= 0, kInvalidArgument, "shape ", ShapeToString(shape),
               " has an unknown dimension where a concrete size is needed");
    n = CheckedMultiply(n, shape[i]);
  }
  return n;
}

int64_t CheckedMultiply(int64_t a, int64_t b, const char* what) {
  int64_t product = 0;
  RILL_CHECK(!__builtin_mul_overflow(a, b, &product), kOutOfRange, what, " overflows: ", a, " * ",
             b, " does not fit in 64 bits");
  return product;
}

std::string ShapeToString(const Shape& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

bool ShapesCompatible(const Shape& a, const Shape& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i] && a[i] != -1 && b[i] != -1) return false;
  }
  return true;
}

}  // namespace rill
