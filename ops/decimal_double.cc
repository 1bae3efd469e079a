#include "ops/decimal_double.h"

#include <charconv>

namespace rill {

double DecimalDouble(float f) {
  char text[32];
  const auto printed = std::to_chars(text, text + sizeof(text), f);
  double d = static_cast<double>(f);
  if (printed.ec == std::errc()) std::from_chars(text, printed.ptr, d);
  return d;
}

}  // namespace rill
