// The flag parser of the `rill` subcommands.
#include "tools/rill/flags.h"

#include <charconv>
#include <iostream>
#include <set>
#include <sstream>
#include <utility>

#include "tools/rill/commands.h"

namespace rill::cli {
namespace {

// Parses all of `text` as an integer of type T.
template <class T>
std::string ParseInteger(const std::string& text, T* out) {
  T value{};
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec == std::errc::result_out_of_range) return "value '" + text + "' is out of range";
  if (ec != std::errc() || ptr != end || text.empty()) {
    return "expected an integer, got '" + text + "'";
  }
  *out = value;
  return "";
}

}  // namespace

Flags::Flags(std::string command, std::string usage)
    : command_(std::move(command)), usage_(std::move(usage)) {}

void Flags::Add(Spec spec) { specs_.push_back(std::move(spec)); }

const Flags::Spec* Flags::Find(const std::string& name) const {
  for (const auto& spec : specs_) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

void Flags::String(const std::string& name, std::string* value) {
  Add({name, false, false, [value](const std::string& text) {
         *value = text;
         return std::string();
       }});
}

void Flags::Int(const std::string& name, int* value) {
  Add({name, false, false, [value](const std::string& text) { return ParseInteger(text, value); }});
}

void Flags::Int64(const std::string& name, int64_t* value) {
  Add({name, false, false, [value](const std::string& text) { return ParseInteger(text, value); }});
}

void Flags::Uint64(const std::string& name, uint64_t* value) {
  Add({name, false, false, [value](const std::string& text) {
         if (!text.empty() && text[0] == '-')
           return "expected a non-negative integer, got '" + text + "'";
         return ParseInteger(text, value);
       }});
}

void Flags::Double(const std::string& name, double* value) {
  Add({name, false, false, [value](const std::string& text) {
         double parsed = 0;
         const char* end = text.data() + text.size();
         auto [ptr, ec] = std::from_chars(text.data(), end, parsed);
         if (ec != std::errc() || ptr != end || text.empty()) {
           return "expected a number, got '" + text + "'";
         }
         *value = parsed;
         return std::string();
       }});
}

void Flags::Bool(const std::string& name, bool* value) {
  Add({name, true, false, [value](const std::string& text) {
         if (text == "true" || text == "1") {
           *value = true;
         } else if (text == "false" || text == "0") {
           *value = false;
         } else {
           return "expected true or false, got '" + text + "'";
         }
         return std::string();
       }});
}

void Flags::StringList(const std::string& name, std::vector<std::string>* values) {
  Add({name, false, true, [values](const std::string& text) {
         values->push_back(text);
         return std::string();
       }});
}

void Flags::Positional(const std::string& what, std::vector<std::string>* values, int min,
                       int max) {
  positional_what_ = what;
  positional_ = values;
  positional_min_ = min;
  positional_max_ = max;
}

int Flags::UsageError(const std::string& message) const {
  std::cerr << command_ << ": " << message << "\n\n" << usage_;
  if (!usage_.empty() && usage_.back() != '\n') std::cerr << "\n";
  return kExitUsage;
}

int Flags::Parse(const std::vector<std::string>& args) {
  for (const auto& arg : args) {
    if (arg == "--") break;
    if (arg == "-h" || arg == "--help") {
      std::cout << usage_;
      if (!usage_.empty() && usage_.back() != '\n') std::cout << "\n";
      return kExitOk;
    }
  }
  std::set<std::string> seen;
  std::vector<std::string> positional;
  bool flags_done = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (!flags_done && arg == "--") {
      flags_done = true;
      continue;
    }
    if (flags_done || arg.size() < 2 || arg[0] != '-') {
      positional.push_back(arg);
      continue;
    }
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(0, eq);
    const Spec* spec = Find(name);
    if (spec == nullptr) return UsageError("unknown flag " + name + " for " + command_);
    if (!spec->repeated && !seen.insert(name).second) {
      return UsageError("flag " + name + " is given twice");
    }
    std::string value;
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
    } else if (spec->is_bool) {
      value = "true";
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      return UsageError("flag " + name + " for " + command_ + " needs a value");
    }
    if (const std::string why = spec->set(value); !why.empty()) {
      return UsageError("flag " + name + ": " + why);
    }
  }
  const int count = static_cast<int>(positional.size());
  if (positional_ == nullptr || (positional_max_ >= 0 && count > positional_max_)) {
    const size_t first_extra = positional_ == nullptr ? 0 : static_cast<size_t>(positional_max_);
    if (count > static_cast<int>(first_extra)) {
      return UsageError("unexpected argument '" + positional[first_extra] + "' for " + command_);
    }
  }
  if (count < positional_min_) {
    return UsageError(
        command_ + " needs " + positional_what_ +
        (positional_min_ > 1 ? " (" + std::to_string(positional_min_) + " of them)" : ""));
  }
  if (positional_ != nullptr) *positional_ = std::move(positional);
  return -1;
}

std::vector<std::string> SplitCommas(const std::string& list) {
  std::vector<std::string> items;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) items.push_back(item);
  return items;
}

}  // namespace rill::cli
