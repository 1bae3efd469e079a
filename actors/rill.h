// Rill's public API in one include, for a trainer that embeds Rill or a
// plugin that adds ops (installed as <rill/rill.h>; the installed tree holds
// this and the headers it includes, nothing of the executor's internals):
//
//   Program, Builder, Var           build a program (runtime/program.h, runtime/builder.h)
//   append_backward, optimizers     Adam(1e-3).Minimize(builder, loss) (runtime/optimizer.h)
//   Scope, Tensor, Place            values and where they live
//   Executor                        the sequential reference executor
//   ParallelExecutor                the actor executor; ExecutionStrategy, BuildStrategy
//   Channel, Select, WaitGroup      CSP primitives (actors/channel.h, select.h, wait_group.h)
//   InputPipeline, BatchSource      feeding batches from decoder threads
//   TraceRecorder                   what the actors did (actors/trace_recorder.h)
//   OpSchema, RILL_PLUGIN, LoadPlugin  ops of your own (runtime/plugin.h)
//   OpActor, RegisterOpActor        ops run by actors of your own (actors/op_actor.h)
//   SaveCheckpoint, LoadCheckpoint  persistable variables to a file
//   Transpile, ParameterServer,     several machines: the trainer and server programs, a
//   TrainerClient                   server, a trainer's links (actors/distributed.md)
//   Version(), RILL_VERSION_STRING  the library's version and the one compiled against
#pragma once

#include "actors/channel.h"
#include "actors/execution_strategy.h"
#include "actors/input_pipeline.h"
#include "actors/op_actor.h"
#include "actors/parallel_executor.h"
#include "actors/pserver.h"
#include "actors/select.h"
#include "actors/trace_recorder.h"
#include "actors/trainer_client.h"
#include "actors/unique_id_exchange.h"
#include "actors/wait_group.h"
#include "runtime/builder.h"
#include "runtime/device/device.h"
#include "runtime/device/device_memory.h"
#include "runtime/device/nccl_communicators.h"
#include "runtime/executor.h"
#include "runtime/io/checkpoint.h"
#include "runtime/io/program_io.h"
#include "runtime/kernel_context.h"
#include "runtime/op_registry.h"
#include "runtime/optimizer.h"
#include "runtime/place.h"
#include "runtime/plugin.h"
#include "runtime/program.h"
#include "runtime/scope.h"
#include "runtime/shape_context.h"
#include "runtime/tensor.h"
#include "runtime/transpiler.h"
#include "runtime/version.h"
