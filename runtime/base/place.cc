#include "rill/place.h"

#include <cstdlib>

#include "rill/error.h"

namespace rill {

std::string Place::ToString() const {
  switch (kind) {
    case Kind::kCpu: return "cpu";
    case Kind::kCuda: return "cuda:" + std::to_string(device);
    case Kind::kAsyncCpu: return "acpu:" + std::to_string(device);
  }
  return "?";
}

Place Place::Parse(const std::string& text) {
  if (text == "cpu" || text.rfind("cpu:", 0) == 0) return Cpu();
  for (const auto& [prefix, kind] :
       {std::pair<std::string, Kind>{"cuda:", Kind::kCuda}, {"acpu:", Kind::kAsyncCpu}}) {
    if (text.rfind(prefix, 0) != 0) continue;
    const std::string index = text.substr(prefix.size());
    char* end = nullptr;
    long value = std::strtol(index.c_str(), &end, 10);
    if (!index.empty() && *end == '\0' && value >= 0 && value < 1024) {
      return {kind, static_cast<int>(value)};
    }
  }
  Fail(ErrorCode::kInvalidArgument, "bad place \"", text,
       "\" (expected cpu, cuda:<index> or acpu:<index>)");
}

std::vector<Place> ParsePlaces(const std::string& text) {
  if (text.rfind("cpu:", 0) == 0) {
    const std::string count = text.substr(4);
    char* end = nullptr;
    const long n = std::strtol(count.c_str(), &end, 10);
    RILL_CHECK(!count.empty() && *end == '\0' && n >= 1 && n <= 1024, kInvalidArgument,
               "bad places \"", text, "\" (cpu:N needs 1 <= N <= 1024)");
    return std::vector<Place>(static_cast<size_t>(n), Place::Cpu());
  }
  std::vector<Place> places;
  size_t begin = 0;
  while (begin <= text.size()) {
    size_t comma = text.find(',', begin);
    if (comma == std::string::npos) comma = text.size();
    places.push_back(Place::Parse(text.substr(begin, comma - begin)));
    begin = comma + 1;
  }
  return places;
}

}  // namespace rill
