// The CAF actors of an actor graph: one per stream, woken when work arrives
// and nobody drains the stream, and the watchdog, which looks at the
// iterations in flight at a fixed period. Both hold the graph weakly: a
// message that arrives after the graph is gone does nothing.
#pragma once

#include <caf/event_based_actor.hpp>
#include <chrono>
#include <memory>

namespace rill {

class ActorGraph;
class OpActor;
class Stream;

class StreamActor : public caf::event_based_actor {
 public:
  StreamActor(caf::actor_config& config, std::weak_ptr<ActorGraph> graph, Stream* stream);
  caf::behavior make_behavior() override;

 private:
  std::weak_ptr<ActorGraph> graph_;
  Stream* stream_;  // owned by the graph
};

// Hosts a custom op actor (op_actor.h) for one op node.
class OpActorHost : public caf::event_based_actor {
 public:
  OpActorHost(caf::actor_config& config, std::weak_ptr<ActorGraph> graph,
              std::unique_ptr<OpActor> op);
  caf::behavior make_behavior() override;

 private:
  std::weak_ptr<ActorGraph> graph_;
  std::unique_ptr<OpActor> op_;
};

class WatchdogActor : public caf::event_based_actor {
 public:
  WatchdogActor(caf::actor_config& config, std::weak_ptr<ActorGraph> graph,
                std::chrono::milliseconds period);
  caf::behavior make_behavior() override;

 private:
  std::weak_ptr<ActorGraph> graph_;
  std::chrono::milliseconds period_;
};

}  // namespace rill
