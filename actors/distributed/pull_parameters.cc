#include <set>

#include "rill/executor.h"
#include "rill/op_desc.h"
#include "rill/trainer_client.h"

namespace rill {

void PullParameters(const proto::ProgramDesc& trainer_main, TrainerClient& client, Scope* scope) {
  RILL_CHECK(trainer_main.blocks_size() > 0, kInvalidArgument, "the trainer program has no blocks");
  std::set<std::string> received;
  for (const auto& op : trainer_main.blocks(0).ops()) {
    if (op.type() != "recv") continue;
    const proto::Attr* endpoint_attr = FindAttr(op, "endpoint");
    const std::string endpoint = endpoint_attr ? endpoint_attr->s() : "";
    for (const std::string& var : OutputVars(op, "Out")) {
      *scope->Var(var)->mutable_tensor() = client.PullNow(endpoint, var, client.start_step());
      received.insert(var);
    }
  }
  // The concat ops that read only what was received: slices back into parameters.
  proto::ProgramDesc joins = trainer_main;
  auto* ops = joins.mutable_blocks(0)->mutable_ops();
  ops->Clear();
  for (const auto& op : trainer_main.blocks(0).ops()) {
    if (op.type() != "concat") continue;
    bool all = true;
    for (const std::string& var : InputVars(op, "X")) all = all && received.count(var) > 0;
    if (all) *ops->Add() = op;
  }
  if (!ops->empty()) Executor().Run(joins, scope);
}

}  // namespace rill
