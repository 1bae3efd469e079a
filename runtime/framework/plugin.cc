#include "rill/plugin.h"

#include <dlfcn.h>

#include <cstdio>
#include <filesystem>
#include <mutex>
#include <set>

#include "rill/error.h"
#include "rill/op_registry.h"

namespace rill {
namespace {

using VersionFn = const char* (*)();
using RegisterFn = void (*)(void*);

// (major, minor) of "M.m.p"; {-1, -1} when it does not parse.
std::pair<int, int> MajorMinor(const std::string& version) {
  int major = -1, minor = -1;
  if (std::sscanf(version.c_str(), "%d.%d", &major, &minor) != 2) return {-1, -1};
  return {major, minor};
}

// Closes the library unless released (a plugin whose ops are registered stays
// loaded: its kernels live there).
struct Library {
  void* handle = nullptr;
  ~Library() {
    if (handle != nullptr) dlclose(handle);
  }
};

}  // namespace

const char* Version() { return RILL_VERSION_STRING; }

bool PluginVersionCompatible(const std::string& plugin_version) {
  const auto [major, minor] = MajorMinor(plugin_version);
  const auto [our_major, our_minor] = MajorMinor(RILL_VERSION_STRING);
  if (major < 0 || major != our_major) return false;
  return major > 0 || minor == our_minor;  // before 1.0 every minor version may break
}

std::vector<std::string> LoadPlugin(const std::string& path) {
  static std::mutex mutex;
  static std::set<std::string> loaded;  // canonical paths
  std::error_code ec;
  const std::string canonical = std::filesystem::canonical(path, ec).string();
  RILL_CHECK(!ec, kNotFound, "plugin \"", path, "\": no such file");
  std::lock_guard<std::mutex> lock(mutex);
  if (loaded.count(canonical)) return {};

  Library library;
  library.handle = dlopen(canonical.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library.handle == nullptr) {
    const char* why = dlerror();
    Fail(ErrorCode::kNotFound, "plugin \"", path, "\" cannot be loaded: ", why ? why : "?");
  }
  auto version = reinterpret_cast<VersionFn>(dlsym(library.handle, "rill_plugin_version"));
  auto registration = reinterpret_cast<RegisterFn>(dlsym(library.handle, "rill_plugin_register"));
  RILL_CHECK(version != nullptr && registration != nullptr, kInvalidArgument, "plugin \"", path,
             "\" is not a Rill plugin (it defines no RILL_PLUGIN block)");
  const std::string built_for = version();
  RILL_CHECK(PluginVersionCompatible(built_for), kInvalidArgument, "plugin \"", path,
             "\" was built against Rill ", built_for, ", which this Rill (", Version(),
             ") cannot load: rebuild it against this version");

  PluginRegistry registry;
  try {
    registration(&registry);
  } catch (const std::exception& e) {
    Fail(ErrorCode::kInvalidArgument, "plugin \"", path, "\": its registration failed: ", e.what());
  }
  std::vector<std::string> types;
  for (const OpSchema& schema : registry.schemas()) types.push_back(schema.type());
  try {
    RegisterOps(std::move(registry.schemas()));
  } catch (const Error& e) {
    Fail(ErrorCode::kInvalidArgument, "plugin \"", path, "\": ", e.message(),
         " (none of its ops is registered)");
  }
  library.handle = nullptr;  // its kernels are in use from now on: never unloaded
  loaded.insert(canonical);
  return types;
}

}  // namespace rill
