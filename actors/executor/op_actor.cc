#include "rill/op_actor.h"

#include <mutex>
#include <unordered_map>

#include "rill/error.h"

namespace rill {
namespace {

struct Registry {
  std::mutex mutex;
  std::unordered_map<std::string, std::shared_ptr<const OpActorFactory>> factories;
};

Registry& OpActors() {
  static Registry* registry = new Registry;  // never destroyed: used at exit
  return *registry;
}

}  // namespace

void RegisterOpActor(const std::string& type, OpActorFactory factory) {
  RILL_CHECK(factory != nullptr, kInvalidArgument, "op actor for \"", type, "\": no factory");
  Registry& r = OpActors();
  std::lock_guard<std::mutex> lock(r.mutex);
  RILL_CHECK(!r.factories.count(type), kInvalidArgument, "op type \"", type,
             "\" already has an op actor");
  r.factories[type] = std::make_shared<const OpActorFactory>(std::move(factory));
}

void UnregisterOpActor(const std::string& type) {
  Registry& r = OpActors();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.factories.erase(type);
}

std::shared_ptr<const OpActorFactory> FindOpActor(const std::string& type) {
  Registry& r = OpActors();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.factories.find(type);
  return it == r.factories.end() ? nullptr : it->second;
}

}  // namespace rill
