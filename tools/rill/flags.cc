// The validators and helpers the `rill` subcommands' flags share. They have
// no description of their own in the help ("N=5", not "N:>= 1=5"): the
// flag's description says what it takes. Numbers
// are read as CLI11 reads them (strtoll and strtod, base 0 for integers), so
// that a validator and the conversion after it agree on every input.
#include "tools/rill/flags.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

namespace rill::cli {

CLI::Validator AtLeast(int64_t min, const std::string& source) {
  const std::string from = source.empty() ? "" : " (from the flag or " + source + ")";
  return CLI::Validator(
      [min, from](std::string& text) -> std::string {
        char* end = nullptr;
        errno = 0;
        const long long value = std::strtoll(text.c_str(), &end, 0);
        if (text.empty() || end != text.c_str() + text.size()) {
          return "expected an integer, got '" + text + "'" + from;
        }
        if (errno == ERANGE) return "value '" + text + "' is out of range" + from;
        if (value < min) return "must be >= " + std::to_string(min) + ", got '" + text + "'" + from;
        return "";
      },
      "");
}

CLI::Validator NonNegative() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        if (text.find('-') != std::string::npos) {
          return "expected a non-negative integer, got '" + text + "'";
        }
        return "";
      },
      "");
}

CLI::Validator Positive() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        if (text.empty() || end != text.c_str() + text.size()) {
          return "expected a number, got '" + text + "'";
        }
        // inf would pass `> 0` and then only turn every parameter into nan.
        if (!(value > 0) || !std::isfinite(value)) {
          return "must be a finite number > 0, got '" + text + "'";
        }
        return "";
      },
      "");
}

std::vector<std::string> SplitCommas(const std::string& list) {
  std::vector<std::string> items;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) items.push_back(item);
  return items;
}

}  // namespace rill::cli
