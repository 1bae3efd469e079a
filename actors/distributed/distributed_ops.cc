// The protocol ops of multi-node training (actors/distributed/distributed.md): the
// trainer's send and recv, the parameter server's listen_and_serv. They have
// no kernel: the actor executor runs them as op actors (actors/distributed/remote_ops.cc,
// actors/pserver*.cc); the reference executor refuses them by name. Their
// schemas are here so that transpiled programs validate.
#include "rill/op_desc.h"
#include "rill/op_registry.h"
#include "rill/shape_context.h"

namespace rill {
namespace {

AttrCheck NotEmpty() {
  return [](const proto::Attr& attr) -> std::string {
    return attr.s().empty() ? "must not be empty" : "";
  };
}

// One optimize block per received gradient and served parameter.
void ListenAndServShape(ShapeContext& ctx) {
  const auto grads = ctx.Attr<std::vector<std::string>>("grads");
  const auto params = ctx.Attr<std::vector<std::string>>("params");
  const size_t blocks = BlockAttrs(ctx.op(), "optimize_blocks").size();
  ctx.Check(grads.size() == blocks && params.size() == blocks, "has ", blocks,
            " optimize blocks but ", grads.size(), " grads and ", params.size(),
            " params (one of each per block)");
}

}  // namespace

RILL_REGISTER_OP(send, OpSchema("send")
                           .Doc("Sends X to the parameter server at `endpoint`, under its name "
                                "(a gradient push). The actor executor runs it as an op actor.")
                           .Input("X", "the variables sent", kDuplicable | kNoGradient)
                           .RequiredAttr("endpoint", AttrType::kString, "the server, HOST:PORT",
                                         NotEmpty()));

RILL_REGISTER_OP(recv, OpSchema("recv")
                           .Doc("Out = the values of the same names the parameter server at "
                                "`endpoint` serves, once it has applied this step's pushes (a "
                                "parameter pull). The actor executor runs it as an op actor; Out "
                                "keeps its declared shape.")
                           .Output("Out", "the variables received", kDuplicable | kNoGradient)
                           .RequiredAttr("endpoint", AttrType::kString, "the server, HOST:PORT",
                                         NotEmpty()));

RILL_REGISTER_OP(
    listen_and_serv,
    OpSchema("listen_and_serv")
        .Doc("The parameter server: listens on `endpoint`, receives grads[i] from every "
             "trainer, runs prepare_block once per step and optimize_blocks[i] on them (sync: "
             "the mean over trainers, once all arrived; async: each push as it comes), serves "
             "params[i] back. The actor executor runs it as an op actor.")
        .RequiredAttr("endpoint", AttrType::kString, "where it listens, HOST:PORT", NotEmpty())
        .Attr("trainers", 1, "how many trainers push to it", AtLeast(1))
        .Attr("sync_mode", true, "wait for every trainer's gradient before an update")
        .Attr("server_index", 0, "which server of the job this is", AtLeast(0))
        .RequiredAttr("optimize_blocks", AttrType::kBlocks,
                      "one block per parameter (or slice) served")
        .Attr("grads", std::vector<std::string>{},
              "per optimize block, the gradient it reads, received from every trainer")
        .Attr("params", std::vector<std::string>{},
              "per optimize block, the parameter it updates, served to trainers")
        .OptionalBlockAttr("prepare_block",
                           "ops run once per step before the optimize blocks (learning-rate "
                           "decay); absent (-1) when there are none")
        .InferShape(ListenAndServShape));

}  // namespace rill
