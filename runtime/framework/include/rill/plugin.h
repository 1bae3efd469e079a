// Plugins: ops defined outside Rill's tree, in a shared library loaded at run
// time. A plugin registers its ops in one block:
//
//   // my_ops.cc, built as a shared library (MODULE) linked against librill
//   #include "rill/plugin.h"
//   RILL_PLUGIN(registry) {
//     registry.Add(OpSchema("my_cube")
//                      .Doc("Out = X^3")
//                      .Input("X", "input").Output("Out", "X cubed")
//                      .InferShape(SameShapeAs("X", "Out"))
//                      .CpuKernel(CubeKernel)
//                      .Grad(CubeGrad));
//   }
//
//   rill::LoadPlugin("libmy_ops.so");       // or: rill --plugin libmy_ops.so run ...
//
// Loading is all or nothing: a plugin built against an incompatible Rill
// (another major version, or another minor one before 1.0), or one that
// defines an op type that is already registered (or twice itself), fails with
// an error naming the file and the op, and none of its ops is registered.
// Loading the same file again does nothing. A plugin must register through
// RILL_PLUGIN, not RILL_REGISTER_OP (whose errors at load time cannot be caught).
#pragma once

#include <string>
#include <vector>

#include "rill/op_schema.h"
#include "rill/version.h"

namespace rill {

// What a plugin's registration function fills in.
class PluginRegistry {
 public:
  void Add(OpSchema schema) { schemas_.push_back(std::move(schema)); }
  std::vector<OpSchema>& schemas() { return schemas_; }

 private:
  std::vector<OpSchema> schemas_;
};

// Loads the plugin at `path` and registers its ops; returns their types.
// Throws kNotFound (no such file, or not loadable) or kInvalidArgument (not a
// plugin, incompatible version, an op type already registered), naming `path`.
std::vector<std::string> LoadPlugin(const std::string& path);

// Whether a plugin compiled against `plugin_version` may run on this library.
bool PluginVersionCompatible(const std::string& plugin_version);

}  // namespace rill

// The symbols LoadPlugin looks for; C linkage so that their names are plain.
#define RILL_PLUGIN(registry)                                                                 \
  static void RillPluginRegister(::rill::PluginRegistry& registry);                           \
  extern "C" __attribute__((visibility("default"))) const char* rill_plugin_version() {       \
    return RILL_VERSION_STRING;                                                               \
  }                                                                                           \
  extern "C" __attribute__((visibility("default"))) void rill_plugin_register(void* opaque) { \
    RillPluginRegister(*static_cast<::rill::PluginRegistry*>(opaque));                        \
  }                                                                                           \
  static void RillPluginRegister(::rill::PluginRegistry& registry)
