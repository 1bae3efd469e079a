// read: takes the next batch (this place's slice of it) from an input
// pipeline. The actor executor first tries inline — the batch is usually
// already waiting in the place's channel — and only when it is not does the
// op wait, on a fiber. The end of the epoch is the pipeline's channels
// closing: read then fails with kOutOfRange "end of data".
#include <chrono>

#include "actors/trace/trace_context.h"
#include "rill/input_pipeline.h"
#include "rill/kernel_context.h"
#include "rill/op_registry.h"

namespace rill {
namespace {

InputPipeline& PipelineOf(const KernelContext& ctx) {
  auto* pipeline = dynamic_cast<InputPipeline*>(ctx.InputVar("Reader")->object().get());
  RILL_CHECK(pipeline != nullptr, kInvalidArgument, "read: variable \"", ctx.InputName("Reader"),
             "\" holds no input pipeline (the trainer sets it in the scope before running)");
  return *pipeline;
}

void Deliver(KernelContext& ctx, const InputPipeline& pipeline, PipelineBatch& batch) {
  RILL_CHECK(static_cast<int>(batch.fields.size()) == ctx.OutputCount("Out"), kInvalidArgument,
             "read: ", pipeline.Describe(), " gives ", batch.fields.size(),
             " field(s), the op has ", ctx.OutputCount("Out"), " output(s)");
  // Copied into the outputs' own buffers (kept from step to step) rather than
  // shared: the decoder thread wrote the batch, and the step's kernels read a
  // buffer this core wrote much faster than one still in the other core's cache.
  for (int i = 0; i < ctx.OutputCount("Out"); ++i) ctx.Output("Out", i)->CopyFrom(batch.fields[i]);
}

[[noreturn]] void EndOfData(const InputPipeline& pipeline) {
  Fail(ErrorCode::kOutOfRange, "end of data: the epoch of ", pipeline.Describe(), " is over");
}

bool TryRead(KernelContext& ctx) {
  InputPipeline& pipeline = PipelineOf(ctx);
  PipelineBatch batch;
  bool ended = false;
  if (!pipeline.TryNext(ctx.place_index(), &batch, &ended)) {
    if (ended) EndOfData(pipeline);
    return false;
  }
  Deliver(ctx, pipeline, batch);
  return true;
}

void ReadKernel(KernelContext& ctx) {
  InputPipeline& pipeline = PipelineOf(ctx);
  PipelineBatch batch;
  bool got = false;
  {
    TraceWait wait(WaitKind::kChannel, pipeline.Describe());
    got = pipeline.Next(ctx.place_index(), &batch);
  }
  if (!got) EndOfData(pipeline);
  Deliver(ctx, pipeline, batch);
}

}  // namespace

RILL_REGISTER_OP(read, OpSchema("read")
                           .Doc("Out = the next batch of Reader's input pipeline (this place's "
                                "slice), one output per field; fails with \"end of data\" once "
                                "the epoch is over.")
                           .Input("Reader", "a variable of kind READER", kNoGradient)
                           .Output("Out", "the batch's fields, in the pipeline's order",
                                   kDuplicable | kNoGradient)
                           .CpuKernel(ReadKernel)
                           .Blocking(TryRead));

}  // namespace rill
