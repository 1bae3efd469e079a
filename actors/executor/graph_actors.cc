#include "actors/executor/graph_actors.h"

#include "actors/executor/actor_graph.h"
#include "actors/executor/messages.h"
#include "rill/op_actor.h"

namespace rill {

StreamActor::StreamActor(caf::actor_config& config, std::weak_ptr<ActorGraph> graph, Stream* stream)
    : caf::event_based_actor(config), graph_(std::move(graph)), stream_(stream) {}

caf::behavior StreamActor::make_behavior() {
  return {[this](wake_atom) {
    if (auto graph = graph_.lock()) graph->OnWake(*stream_);
  }};
}

OpActorHost::OpActorHost(caf::actor_config& config, std::weak_ptr<ActorGraph> graph,
                         std::unique_ptr<OpActor> op)
    : caf::event_based_actor(config), graph_(std::move(graph)), op_(std::move(op)) {}

caf::behavior OpActorHost::make_behavior() {
  return {[this](run_op_atom, int32_t slot, int32_t node, uint32_t generation) {
    if (auto graph = graph_.lock()) graph->RunActorOp(slot, node, generation, *op_);
  }};
}

WatchdogActor::WatchdogActor(caf::actor_config& config, std::weak_ptr<ActorGraph> graph,
                             std::chrono::milliseconds period)
    : caf::event_based_actor(config), graph_(std::move(graph)), period_(period) {}

caf::behavior WatchdogActor::make_behavior() {
  delayed_send(this, period_, tick_atom::value);
  return {[this](tick_atom) {
    auto graph = graph_.lock();
    if (!graph) return;
    graph->WatchdogTick();
    delayed_send(this, period_, tick_atom::value);
  }};
}

}  // namespace rill
