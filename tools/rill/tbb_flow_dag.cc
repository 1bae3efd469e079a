#include "tools/rill/tbb_flow_dag.h"

#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>

#include <vector>

#include "rill/error.h"

namespace rill::cli {

namespace flow = oneapi::tbb::flow;

struct TbbFlowDag::Impl {
  explicit Impl(int threads)
      : control(oneapi::tbb::global_control::max_allowed_parallelism, static_cast<size_t>(threads)),
        arena(threads) {}

  oneapi::tbb::global_control control;
  oneapi::tbb::task_arena arena;
  std::unique_ptr<flow::graph> graph;
  std::unique_ptr<flow::broadcast_node<flow::continue_msg>> start;
  std::vector<std::unique_ptr<flow::continue_node<flow::continue_msg>>> nodes;
};

TbbFlowDag::TbbFlowDag(const std::vector<std::vector<int>>& predecessors, PreparedBlock& prepared,
                       int threads)
    : impl_(std::make_unique<Impl>(threads)) {
  auto& ops = prepared.ops();
  RILL_CHECK(predecessors.size() == ops.size(), kInvalidArgument, "predecessor lists for ",
             predecessors.size(), " ops, the block has ", ops.size());
  impl_->arena.execute([&] {
    impl_->graph = std::make_unique<flow::graph>();
    impl_->start = std::make_unique<flow::broadcast_node<flow::continue_msg>>(*impl_->graph);
    for (auto& op : ops) {
      PreparedBlock::Op* prepared_op = &op;
      impl_->nodes.push_back(std::make_unique<flow::continue_node<flow::continue_msg>>(
          *impl_->graph, [prepared_op](const flow::continue_msg&) {
            (*prepared_op->kernel)(*prepared_op->context);
          }));
    }
    for (size_t i = 0; i < predecessors.size(); ++i) {
      if (predecessors[i].empty()) flow::make_edge(*impl_->start, *impl_->nodes[i]);
      for (int pred : predecessors[i]) flow::make_edge(*impl_->nodes[pred], *impl_->nodes[i]);
    }
  });
}

TbbFlowDag::~TbbFlowDag() {
  impl_->arena.execute([&] {
    impl_->nodes.clear();
    impl_->start.reset();
    impl_->graph.reset();
  });
}

void TbbFlowDag::Run() {
  impl_->arena.execute([&] {
    impl_->start->try_put(flow::continue_msg());
    impl_->graph->wait_for_all();
  });
}

}  // namespace rill::cli
