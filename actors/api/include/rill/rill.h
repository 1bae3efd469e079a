// Rill's public API in one include, for a trainer that embeds Rill or a
// plugin that adds ops. Every header it includes is installed under
// <prefix>/include/rill/ and may be included on its own; none names a type
// of CAF or Boost, so a user's build needs no include path but <prefix>/include.
//
//   Program, Builder, Var           build a program (rill/program.h, rill/builder.h)
//   append_backward, optimizers     Adam(1e-3).Minimize(builder, loss) (rill/optimizer.h)
//   Scope, Tensor, Place            values and where they live (rill/scope.h, tensor.h, place.h)
//   Executor                        the sequential reference executor (rill/executor.h)
//   ParallelExecutor                the actor executor; ExecutionStrategy, BuildStrategy
//   Channel, Select, WaitGroup      CSP primitives (rill/channel.h, select.h, wait_group.h)
//   InputPipeline, BatchSource      feeding batches from decoder threads (rill/input_pipeline.h)
//   TraceRecorder                   what the actors did (rill/trace_recorder.h)
//   OpSchema, RILL_PLUGIN, LoadPlugin  ops of your own (rill/plugin.h)
//   OpActor, RegisterOpActor        ops run by actors of your own (rill/op_actor.h)
//   SaveCheckpoint, LoadCheckpoint  persistable variables to a file (rill/checkpoint.h)
//   ReadNpy, WriteNpy               tensors from and to .npy files (rill/npy.h)
//   Transpile, ParameterServer,     several machines: the trainer and server programs, a
//   TrainerClient                   server, a trainer's links (rill/transpiler.h, pserver.h,
//                                   trainer_client.h)
//   Error, ErrorCode                what a failed call throws (rill/error.h)
//   SetLogSink, LogLevel            where the library's messages go (rill/log.h)
//   Version(), RILL_VERSION_STRING  the library's version and the one compiled against
#pragma once

#include "rill/builder.h"
#include "rill/channel.h"
#include "rill/checkpoint.h"
#include "rill/device.h"
#include "rill/device_memory.h"
#include "rill/error.h"
#include "rill/execution_strategy.h"
#include "rill/executor.h"
#include "rill/input_pipeline.h"
#include "rill/kernel_context.h"
#include "rill/log.h"
#include "rill/nccl_communicators.h"
#include "rill/npy.h"
#include "rill/op_actor.h"
#include "rill/op_registry.h"
#include "rill/optimizer.h"
#include "rill/parallel_executor.h"
#include "rill/place.h"
#include "rill/plugin.h"
#include "rill/process_group.h"
#include "rill/program.h"
#include "rill/program_io.h"
#include "rill/pserver.h"
#include "rill/scope.h"
#include "rill/select.h"
#include "rill/shape_context.h"
#include "rill/tensor.h"
#include "rill/trace_recorder.h"
#include "rill/trainer_client.h"
#include "rill/transpiler.h"
#include "rill/unique_id_exchange.h"
#include "rill/version.h"
#include "rill/wait_group.h"
