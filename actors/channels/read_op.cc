// read: takes the next batch (this place's slice of it) from a batch reader,
// usually an input pipeline. The actor executor first tries inline, on the
// place's stream — the batch is usually already waiting in the place's
// channel, or the place decodes it itself — and only when it is not does the
// op wait, on a fiber. The end of the epoch is the pipeline's channels
// closing: read then fails with kOutOfRange "end of data".
#include <chrono>

#include "actors/trace/trace_context.h"
#include "rill/input_pipeline.h"
#include "rill/kernel_context.h"
#include "rill/op_registry.h"

namespace rill {
namespace {

BatchReader& ReaderOf(const KernelContext& ctx) {
  auto* reader = dynamic_cast<BatchReader*>(ctx.InputVar("Reader")->object().get());
  RILL_CHECK(reader != nullptr, kInvalidArgument, "read: variable \"", ctx.InputName("Reader"),
             "\" holds no input pipeline or other batch reader (the trainer sets it in the "
             "scope before running)");
  return *reader;
}

void Deliver(KernelContext& ctx, const BatchReader& reader, PipelineBatch& batch) {
  RILL_CHECK(static_cast<int>(batch.fields.size()) == ctx.OutputCount("Out"), kInvalidArgument,
             "read: ", reader.Describe(), " gives ", batch.fields.size(), " field(s), the op has ",
             ctx.OutputCount("Out"), " output(s)");
  // A decoder thread's batch is copied into the outputs' own buffers (kept
  // from step to step) rather than shared: the step's kernels read a buffer
  // this core wrote much faster than one still in the other core's cache. A
  // slice this thread decoded is in its cache already.
  for (int i = 0; i < ctx.OutputCount("Out"); ++i) {
    if (batch.decoded_here) {
      ctx.Output("Out", i)->ShareDataWith(batch.fields[i]);
    } else {
      ctx.Output("Out", i)->CopyFrom(batch.fields[i]);
    }
  }
}

[[noreturn]] void EndOfData(const BatchReader& reader) {
  Fail(ErrorCode::kOutOfRange, "end of data: the epoch of ", reader.Describe(), " is over");
}

bool TryRead(KernelContext& ctx) {
  BatchReader& reader = ReaderOf(ctx);
  PipelineBatch batch;
  bool ended = false;
  if (!reader.TryNext(ctx.place_index(), &batch, &ended)) {
    if (ended) EndOfData(reader);
    return false;
  }
  Deliver(ctx, reader, batch);
  return true;
}

void ReadKernel(KernelContext& ctx) {
  BatchReader& reader = ReaderOf(ctx);
  PipelineBatch batch;
  bool got = false;
  {
    TraceWait wait(WaitKind::kChannel, reader.Describe());
    got = reader.Next(ctx.place_index(), &batch);
  }
  if (!got) EndOfData(reader);
  Deliver(ctx, reader, batch);
}

}  // namespace

RILL_REGISTER_OP(read, OpSchema("read")
                           .Doc("Out = the next batch of Reader (an input pipeline or another "
                                "batch reader; this place's slice), one output per field; fails "
                                "with \"end of data\" once the epoch is over.")
                           .Input("Reader", "a variable of kind READER", kNoGradient)
                           .Output("Out", "the batch's fields, in the pipeline's order",
                                   kDuplicable | kNoGradient)
                           .CpuKernel(ReadKernel)
                           .Blocking(TryRead));

}  // namespace rill
