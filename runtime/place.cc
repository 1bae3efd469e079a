#include "runtime/place.h"

#include <cstdlib>

#include "runtime/error.h"

namespace rill {

std::string Place::ToString() const {
  return is_cpu() ? std::string("cpu") : "cuda:" + std::to_string(device);
}

Place Place::Parse(const std::string& text) {
  if (text == "cpu" || text.rfind("cpu:", 0) == 0) return Cpu();
  if (text.rfind("cuda:", 0) == 0) {
    const std::string index = text.substr(5);
    char* end = nullptr;
    long value = std::strtol(index.c_str(), &end, 10);
    if (!index.empty() && *end == '\0' && value >= 0 && value < 1024) {
      return Cuda(static_cast<int>(value));
    }
  }
  Fail(ErrorCode::kInvalidArgument, "bad place \"", text, "\" (expected cpu or cuda:<index>)");
}

}  // namespace rill
