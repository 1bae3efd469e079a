// A plugin that defines a new op and one Rill already has (scale): loading it
// must fail and register neither.
#include "rill/kernel_context.h"
#include "rill/plugin.h"

namespace {
void Nothing(rill::KernelContext&) {}
}  // namespace

RILL_PLUGIN(registry) {
  registry.Add(rill::OpSchema("plugin_never_registered").CpuKernel(Nothing));
  registry.Add(rill::OpSchema("scale").CpuKernel(Nothing));
}
