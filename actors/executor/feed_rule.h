// FeedRule: how an actor graph treats a run's feeds, the same rule the
// reference Executor follows (README, "Feeds"):
//   - a fed name must be a variable of the block (or one it sees), holding a
//     value of the declared type and a compatible shape;
//   - a fed variable is set before the run starts, as if assigned: ops that
//     write it later overwrite it, and one no op uses keeps the fed value
//     (fetch it after the run);
//   - a variable the block reads before any op writes it (not persistable)
//     must be fed, or hold a value in the executor's scope, which the run then
//     takes as if it were fed; otherwise the run fails before any op runs,
//     naming the op that reads it;
//   - feeds split over several places must have the same number of rows;
//   - a persistable variable is shared by the iterations in flight: it may be
//     fed only when they cannot overlap (one iteration at a time).
// Threads: const methods from any thread; Bind on the slot's owner.
#pragma once

#include <string>
#include <vector>

#include "actors/executor/built_graph.h"
#include "actors/executor/iteration_slot.h"
#include "rill/feeds.h"
#include "rill/scope.h"

namespace rill {

class FeedRule {
 public:
  // For `graph`, whose executor's scope is `scope`, running `slots` iterations at most at once.
  FeedRule(const BuiltGraph& graph, const Scope& scope, int slots);

  // Checks the feeds and fetches of a run; throws rill::Error naming the
  // variable (and the op that needs it) when the rule refuses them.
  void Check(const FeedList& feeds, const std::vector<std::string>& fetches) const;
  // The run's feeds: those given, and for each variable read before it is
  // written and not given, the value the executor's scope holds.
  FeedList Complete(const FeedList& feeds) const;
  // Binds the fed variables no feed node reads (unused, or written before
  // they are read) into every place's scope of `slot`: split over the places
  // like the feed nodes' values when the places keep copies of their own,
  // whole when they share one.
  void BindUnread(IterationSlot& slot, const FeedList& feeds) const;

 private:
  const BuiltGraph& graph_;
  const Scope& scope_;
  const int slots_;
};

}  // namespace rill
