// The CSP ops of a program: channels (create, send, recv, close), go blocks
// and select (while loops: while_op.cc). Their kernels block the way the
// channel primitives do — on a fiber or a plain thread — so the reference
// executor runs them as they are; the actor executor runs the Blocking() ones
// on its fiber pool and go blocks as fibers of the iteration
// (actors/executor/async_ops.cc).
//
// Ordering: these ops are barriers of their block in the actor executor's
// graph (OpSchema::Barrier), so values shared by name with a go block are
// ordered by the channel operations around them. Send, recv and close also
// name the channel as an output (ChannelOut), which keeps them in order
// against the go blocks that use the channel too.
#include <memory>

#include "actors/channels/tensor_channel.h"
#include "actors/trace/trace_context.h"
#include "rill/executor.h"
#include "rill/op_desc.h"
#include "rill/op_registry.h"
#include "rill/select.h"
#include "rill/shape_context.h"

namespace rill {
namespace {

constexpr unsigned kChannelSlot = kNoGradient;
constexpr unsigned kChannelOut = kOptional | kNoGradient;

void SetStatus(KernelContext& ctx, const std::string& slot, int i, bool ok) {
  if (ctx.OutputCount(slot) <= i) return;
  *ctx.Output(slot, i)->Allocate<int32_t>({1}) = ok ? 1 : 0;
}

std::string SubBlockName(const KernelContext& ctx, int block) {
  return StrCat("block ", block, " (", ctx.op().type(), ")");
}

// ---------------------------------------------------------------- channels

void ChannelCreateKernel(KernelContext& ctx) {
  const int64_t capacity = ctx.Attr<int64_t>("capacity");
  const std::string& name = ctx.op().outputs(0).vars(0);
  auto channel = std::make_shared<TensorChannel>(
      name, ParseDataType(ctx.Attr<std::string>("dtype")), ctx.Attr<std::vector<int64_t>>("shape"),
      static_cast<size_t>(capacity));
  // If the run fails, receivers and senders parked on it must return.
  std::weak_ptr<TensorChannel> weak = channel;
  ctx.run().OnFailure([weak] {
    if (auto c = weak.lock()) c->channel().Close();
  });
  ctx.OutputVar("Out")->set_object(std::move(channel));
}

void ChannelCreateShape(ShapeContext& ctx) {
  ctx.SetOutput("Out", ctx.Attr<std::vector<int64_t>>("shape"),
                ParseDataType(ctx.Attr<std::string>("dtype")));
}

void ChannelSendKernel(KernelContext& ctx) {
  auto channel = ChannelInput(ctx, "Channel");
  const Tensor& value = ctx.Input("X");
  channel->CheckElement(value);
  // A copy: the sender may overwrite X before the receiver is done with it.
  ChannelStatus status = ChannelStatus::kClosed;
  {
    TraceWait wait(WaitKind::kChannel, channel->name());
    status = channel->channel().Send(value.Clone());
  }
  RILL_CHECK(status == ChannelStatus::kOk, kInvalidArgument, "send on ", channel->Describe(),
             ", which is closed");
}

void ChannelRecvKernel(KernelContext& ctx) {
  auto channel = ChannelInput(ctx, "Channel");
  Tensor value;
  ChannelStatus status = ChannelStatus::kClosed;
  {
    TraceWait wait(WaitKind::kChannel, channel->name());
    status = channel->channel().Recv(&value);
  }
  const bool ok = status == ChannelStatus::kOk;
  *ctx.Output("Out") = ok ? std::move(value) : channel->ZeroElement();
  SetStatus(ctx, "Status", 0, ok);
}

void ChannelRecvShape(ShapeContext& ctx) {
  ctx.SetOutput("Out", ctx.InputShape("Channel"), ctx.InputType("Channel"));
  ctx.SetOutput("Status", {1}, DataType::kInt32);
}

void ChannelCloseKernel(KernelContext& ctx) {
  auto channel = ChannelInput(ctx, "Channel");
  RILL_CHECK(!channel->channel().closed(), kInvalidArgument, "close of ", channel->Describe(),
             ", which is already closed");
  channel->channel().Close();
}

// Ops that name the channel as ChannelOut keep its declaration.
void KeepChannel(ShapeContext& ctx) {
  if (ctx.HasOutput("ChannelOut")) {
    ctx.SetOutput("ChannelOut", ctx.InputShape("Channel"), ctx.InputType("Channel"));
  }
}

// ---------------------------------------------------------------- go

void GoKernel(KernelContext& ctx) {
  const int block = BlockAttr(ctx.op(), "sub_block");
  RunContext& run = ctx.run();
  const Place place = ctx.place();
  // Locals of the block live in a scope of its own; the parent's variables
  // are shared by name. The block may outlive this op and the scope it runs
  // in (another go block's, a loop body's): its scope keeps those alive.
  std::shared_ptr<Scope> scope = Scope::MakeLocal(ctx.scope());
  run.Go(SubBlockName(ctx, block), [&run, scope, place, block]() mutable {
    const std::shared_ptr<Scope> local = std::move(scope);  // gone when the block ends
    Executor executor(place);
    auto prepared = executor.PrepareSubBlock(run, local.get(), block);
    executor.Run(*prepared);
  });
}

// ---------------------------------------------------------------- select

// Case i of a select: its kind and which of the op's slot entries it uses.
struct SelectCase {
  enum Kind { kRecv, kSend, kDefault } kind = kDefault;
  int channel = -1;  // index into Channels
  int value = -1;    // recv: index into Out/Status; send: index into X
};

std::vector<SelectCase> SelectCases(const KernelContext& ctx) {
  std::vector<SelectCase> cases;
  int channels = 0, recvs = 0, sends = 0;
  for (const std::string& kind : ctx.Attr<std::vector<std::string>>("case_kinds")) {
    SelectCase c;
    if (kind == "recv") {
      c = {SelectCase::kRecv, channels++, recvs++};
    } else if (kind == "send") {
      c = {SelectCase::kSend, channels++, sends++};
    }
    cases.push_back(c);
  }
  RILL_CHECK(channels == ctx.InputCount("Channels") && sends == ctx.InputCount("X") &&
                 recvs == ctx.OutputCount("Out"),
             kInvalidArgument, "select: case_kinds name ", channels, " channel(s), ", sends,
             " send value(s) and ", recvs, " receive output(s); the op binds ",
             ctx.InputCount("Channels"), ", ", ctx.InputCount("X"), " and ",
             ctx.OutputCount("Out"));
  return cases;
}

void SelectKernel(KernelContext& ctx) {
  const std::vector<SelectCase> cases = SelectCases(ctx);
  const std::vector<int> blocks = BlockAttrs(ctx.op(), "case_blocks");
  RILL_CHECK(blocks.size() == cases.size(), kInvalidArgument, "select has ", cases.size(),
             " case(s) but ", blocks.size(), " case block(s)");
  std::vector<std::shared_ptr<TensorChannel>> channels;
  for (int i = 0; i < ctx.InputCount("Channels"); ++i)
    channels.push_back(ChannelInput(ctx, "Channels", i));
  std::vector<Tensor> received(static_cast<size_t>(ctx.OutputCount("Out")));
  Select select;
  for (const SelectCase& c : cases) {
    if (c.kind == SelectCase::kRecv) {
      select.Recv(channels[c.channel]->channel(), &received[c.value]);
    } else if (c.kind == SelectCase::kSend) {
      const Tensor& value = ctx.Input("X", c.value);
      channels[c.channel]->CheckElement(value);
      select.Send(channels[c.channel]->channel(), value.Clone());
    } else {
      select.Default();
    }
  }
  SelectResult result;
  {
    TraceWait wait(WaitKind::kChannel, "select");
    result = select.Wait();
  }
  const SelectCase& chosen = cases[result.index];
  if (chosen.kind == SelectCase::kSend) {
    RILL_CHECK(result.status == ChannelStatus::kOk, kInvalidArgument, "select: send on ",
               channels[chosen.channel]->Describe(), ", which is closed");
  } else if (chosen.kind == SelectCase::kRecv) {
    const bool ok = result.status == ChannelStatus::kOk;
    *ctx.Output("Out", chosen.value) =
        ok ? std::move(received[chosen.value]) : channels[chosen.channel]->ZeroElement();
    SetStatus(ctx, "Status", chosen.value, ok);
  }
  std::shared_ptr<Scope> local = Scope::MakeLocal(ctx.scope());  // may outlive the op, as in while
  Executor executor(ctx.place());
  auto body = executor.PrepareSubBlock(ctx.run(), local.get(), blocks[result.index]);
  executor.Run(*body);
}

void SelectShape(ShapeContext& ctx) {
  // Out[r] takes the element type of the r-th receiving case's channel.
  const auto kinds = ctx.Attr<std::vector<std::string>>("case_kinds");
  int channel = 0, recv = 0;
  for (const auto& kind : kinds) {
    ctx.Check(kind == "recv" || kind == "send" || kind == "default", "select case kind \"", kind,
              "\" (must be recv, send or default)");
    if (kind == "default") continue;
    ctx.Check(channel < ctx.InputCount("Channels"),
              "select names more channel cases than Channels");
    if (kind == "recv") {
      ctx.SetOutput("Out", ctx.InputShape("Channels", channel), ctx.InputType("Channels", channel),
                    recv);
      ctx.SetOutput("Status", {1}, DataType::kInt32, recv);
      ++recv;
    }
    ++channel;
  }
}

}  // namespace

RILL_REGISTER_OP(channel_create,
                 OpSchema("channel_create")
                     .Doc("Out = a new channel of `dtype` elements of `shape`, holding up to "
                          "`capacity` values (0: every send waits for its receiver).")
                     .Output("Out", "the channel variable (kind CHANNEL)", kChannelSlot)
                     .Attr("capacity", 0, "buffered values", AtLeast(0))
                     .Attr("dtype", "float32", "element type")
                     .Attr("shape", std::vector<int64_t>{}, "element shape (-1: any)")
                     .InferShape(ChannelCreateShape)
                     .CpuKernel(ChannelCreateKernel));

RILL_REGISTER_OP(channel_send,
                 OpSchema("channel_send")
                     .Doc("Sends a copy of X on Channel, waiting for room; an error if the "
                          "channel is closed.")
                     .Input("Channel", "the channel", kChannelSlot)
                     .Input("X", "the value", kNoGradient)
                     .Output("ChannelOut", "the same channel variable (orders its ops)",
                             kChannelOut)
                     .InferShape(KeepChannel)
                     .CpuKernel(ChannelSendKernel)
                     .Blocking()
                     .Barrier());

RILL_REGISTER_OP(channel_recv,
                 OpSchema("channel_recv")
                     .Doc("Out = the next value of Channel, waiting for one; once the channel "
                          "is closed and drained, Out = zeros and Status = 0.")
                     .Input("Channel", "the channel", kChannelSlot)
                     .Output("Out", "the value received", kNoGradient)
                     .Output("Status", "int32[1]: 1 received, 0 closed", kOptional | kNoGradient)
                     .Output("ChannelOut", "the same channel variable (orders its ops)",
                             kChannelOut)
                     .InferShape([](ShapeContext& ctx) {
                       ChannelRecvShape(ctx);
                       KeepChannel(ctx);
                     })
                     .CpuKernel(ChannelRecvKernel)
                     .Blocking()
                     .Barrier());

RILL_REGISTER_OP(channel_close,
                 OpSchema("channel_close")
                     .Doc("Closes Channel: receivers drain what is buffered, then see it closed; "
                          "parked senders fail. Closing twice is an error.")
                     .Input("Channel", "the channel", kChannelSlot)
                     .Output("ChannelOut", "the same channel variable (orders its ops)",
                             kChannelOut)
                     .InferShape(KeepChannel)
                     .CpuKernel(ChannelCloseKernel)
                     .Barrier());

RILL_REGISTER_OP(go,
                 OpSchema("go")
                     .Doc("Runs sub_block concurrently (a fiber on the actor executor, a thread on "
                          "the reference one), sharing this block's variables by name. The run "
                          "ends after the block; its error is the run's.")
                     .Input("X", "variables the block reads (documentation; optional)",
                            kOptional | kDuplicable | kNoGradient)
                     .RequiredAttr("sub_block", AttrType::kBlock, "the block to run")
                     .CpuKernel(GoKernel)
                     .Barrier());

RILL_REGISTER_OP(select,
                 OpSchema("select")
                     .Doc("Waits until one of its cases can go on — receive from a channel, "
                          "send on one, or (if present) default — picking at random among "
                          "ready cases, then runs that case's block.")
                     .Input("Channels", "the channel of each recv and send case, in case order",
                            kDuplicable | kOptional | kChannelSlot)
                     .Input("X", "the value of each send case, in case order",
                            kDuplicable | kOptional | kNoGradient)
                     .Output("Out", "the value of each recv case, in case order",
                             kDuplicable | kOptional | kNoGradient)
                     .Output("Status", "int32[1] per recv case: 1 received, 0 closed",
                             kDuplicable | kOptional | kNoGradient)
                     .Output("ChannelsOut", "the same channel variables (order their ops)",
                             kDuplicable | kOptional | kNoGradient)
                     .RequiredAttr("case_kinds", AttrType::kStrings,
                                   "recv, send or default, per case")
                     .RequiredAttr("case_blocks", AttrType::kBlocks, "the block of each case")
                     .InferShape(SelectShape)
                     .CpuKernel(SelectKernel)
                     .Blocking()
                     .Barrier());

}  // namespace rill
