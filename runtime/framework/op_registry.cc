#include "rill/op_registry.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "rill/error.h"

namespace rill {
namespace {

struct Registry {
  std::mutex mutex;  // guards registration; lookups happen after static init
  std::unordered_map<std::string, std::unique_ptr<OpSchema>> schemas;
  // Kernels registered before their op: attached when it is.
  std::unordered_map<std::string, std::vector<std::pair<Place::Kind, KernelFn>>> pending_kernels;
};

void AttachKernel(OpSchema& schema, Place::Kind place, KernelFn fn) {
  RILL_CHECK(schema.FindKernel(place) == nullptr, kInvalidArgument, "op type \"", schema.type(),
             "\" already has a kernel for ", Place{place, 0}.ToString());
  schema.Kernel(place, std::move(fn));
}

Registry& GlobalRegistry() {
  static Registry* registry = new Registry;  // never destroyed: used by static destructors
  return *registry;
}

}  // namespace

bool RegisterOp(OpSchema schema) {
  std::vector<OpSchema> one;
  one.push_back(std::move(schema));
  RegisterOps(std::move(one));
  return true;
}

void RegisterOps(std::vector<OpSchema> schemas) {
  Registry& r = GlobalRegistry();
  std::lock_guard lock(r.mutex);
  for (size_t i = 0; i < schemas.size(); ++i) {
    const std::string& type = schemas[i].type();
    RILL_CHECK(!r.schemas.count(type), kInvalidArgument, "op type \"", type,
               "\" is already registered");
    for (size_t j = 0; j < i; ++j) {
      RILL_CHECK(schemas[j].type() != type, kInvalidArgument, "op type \"", type,
                 "\" is defined twice");
    }
  }
  for (auto& schema : schemas) {
    const std::string type = schema.type();
    auto& registered = r.schemas[type] = std::make_unique<OpSchema>(std::move(schema));
    auto pending = r.pending_kernels.find(type);
    if (pending == r.pending_kernels.end()) continue;
    for (auto& [place, fn] : pending->second) AttachKernel(*registered, place, std::move(fn));
    r.pending_kernels.erase(pending);
  }
}

bool RegisterKernel(const std::string& type, Place::Kind place, KernelFn fn) {
  Registry& r = GlobalRegistry();
  std::lock_guard lock(r.mutex);
  auto it = r.schemas.find(type);
  if (it == r.schemas.end()) {
    r.pending_kernels[type].emplace_back(place, std::move(fn));
  } else {
    AttachKernel(*it->second, place, std::move(fn));
  }
  return true;
}

const OpSchema* FindOpSchema(const std::string& type) {
  Registry& r = GlobalRegistry();
  std::lock_guard lock(r.mutex);
  auto it = r.schemas.find(type);
  return it == r.schemas.end() ? nullptr : it->second.get();
}

const OpSchema& GetOpSchema(const std::string& type) {
  const OpSchema* schema = FindOpSchema(type);
  RILL_CHECK(schema != nullptr, kNotFound, "unknown op type \"", type, "\"");
  return *schema;
}

std::vector<std::string> RegisteredOpTypes() {
  Registry& r = GlobalRegistry();
  std::lock_guard lock(r.mutex);
  std::vector<std::string> types;
  for (const auto& [type, schema] : r.schemas) types.push_back(type);
  std::sort(types.begin(), types.end());
  return types;
}

}  // namespace rill
