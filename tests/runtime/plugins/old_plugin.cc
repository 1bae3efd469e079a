// A plugin built against another Rill: its version symbol says 0.0.1.
#include "rill/kernel_context.h"
#include "rill/plugin.h"

namespace {
void Nothing(rill::KernelContext&) {}
}  // namespace

extern "C" __attribute__((visibility("default"))) const char* rill_plugin_version() {
  return "0.0.1";
}
extern "C" __attribute__((visibility("default"))) void rill_plugin_register(void* opaque) {
  static_cast<rill::PluginRegistry*>(opaque)->Add(
      rill::OpSchema("plugin_from_the_past").CpuKernel(Nothing));
}
