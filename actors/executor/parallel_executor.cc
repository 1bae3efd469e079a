#include "rill/parallel_executor.h"

#include "actors/executor/actor_graph.h"
#include "actors/executor/graph_of.h"

namespace rill {

ParallelExecutor::ParallelExecutor(const proto::ProgramDesc& program, Scope* scope,
                                   Options options) {
  BuildStopwatch watch;
  runtime_ = options.runtime ? std::move(options.runtime)
                             : std::make_shared<Runtime>(options.strategy.num_threads);
  runtime_ms_ = watch.Lap();
  graph_ = ActorGraph::Spawn(runtime_.get(), program, options.block_index, options.places, scope,
                             options.strategy, options.build);
}

ParallelExecutor::~ParallelExecutor() {
  if (graph_) graph_->Shutdown();
  graph_.reset();
}

std::vector<Tensor> ParallelExecutor::Run(const FeedList& feeds,
                                          const std::vector<std::string>& fetches) {
  return graph_->Run(feeds, fetches);
}

std::future<std::vector<Tensor>> ParallelExecutor::RunAsync(
    const FeedList& feeds, const std::vector<std::string>& fetches) {
  return graph_->RunAsync(feeds, fetches);
}

const SsaGraph& GraphOf(const ParallelExecutor& executor) { return executor.graph_->graph(); }

BuildTimes BuildTimesOf(const ParallelExecutor& executor) {
  BuildTimes times = executor.graph_->build_times();
  times.runtime_ms = executor.runtime_ms_;
  return times;
}

void ParallelExecutor::BroadcastParameters() { graph_->BroadcastParameters(); }

FetchMerge ParallelExecutor::MergeFor(const std::string& name) const {
  return graph_->MergeFor(name);
}

IterationStats ParallelExecutor::last_stats() const { return graph_->last_stats(); }

const ExecutionStrategy& ParallelExecutor::strategy() const { return graph_->strategy(); }

int ParallelExecutor::max_iterations_in_flight() const {
  return graph_->max_iterations_in_flight();
}

void ParallelExecutor::WithholdFeedsForTesting(const std::vector<std::string>& names) {
  graph_->WithholdFeedsForTesting(names);
}

}  // namespace rill
