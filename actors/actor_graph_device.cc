// Device places: ops launched on device streams with events between them
// (actor_graph.h, "device places"). The same code drives the asynchronous
// CPU device (each stream a thread) and, with CUDA, GPU streams.
#include "actors/actor_graph.h"
#include "actors/trace_context.h"
#include "runtime/device/device.h"

namespace rill {

void ActorGraph::BuildDeviceStreams() {
  bool any = false;
  for (const Place& place : places_) any |= place.is_device();
  if (!any) return;
  device_streams_.resize(streams_.size());
  comm_streams_.resize(places_.size());
  for (const auto& stream : streams_) {
    const Place& place = places_[stream->place()];
    if (!place.is_device()) continue;
    device_streams_[stream->id()] =
        NewDeviceStream(place, StrCat("compute ", stream->index_in_place()));
  }
  for (size_t p = 0; p < places_.size(); ++p) {
    if (places_[p].is_device()) comm_streams_[p] = NewDeviceStream(places_[p], "comm");
  }
  // What runs on a device place is a kernel or a feed: ops that run as
  // blocks, fibers or actors of their own need the host.
  const proto::BlockDesc& block = plan_.program.blocks(block_index_);
  for (const OpNode& op : graph_.ops) {
    if (op.place < 0 || !places_[op.place].is_device()) continue;
    const Node& node = nodes_[op.id];
    if (node.block || node.fiber || node.actor) {
      Fail(ErrorCode::kUnimplemented, "block ", block_index_, ", op ", op.op_index, " (",
           block.ops(op.op_index).type(), "): cannot run on ", places_[op.place].ToString(),
           " (a block, blocking or actor op runs on the CPU place)");
    }
  }
}

void ActorGraph::WaitForDeviceInputs(int node, DeviceStream& device, Slot& slot) {
  const bool host_wait = strategy_.dependency_wait == DependencyWait::kStreamSync;
  const int n = places();
  for (int pred : graph_.ops[node].predecessors) {
    const Node& producer = nodes_[pred];
    if (producer.collective >= 0) {  // written by every place's chunk
      for (int q = 0; q < n; ++q) {
        if (comm_streams_[q] == nullptr) continue;
        if (host_wait) {
          comm_streams_[q]->Synchronize();
        } else {
          device.Wait(*slot.chunk_events[static_cast<size_t>(producer.collective * n + q)]);
        }
      }
      continue;
    }
    if (producer.stream < 0) continue;
    DeviceStream* other = device_streams_[producer.stream].get();
    if (other == nullptr || other == &device) continue;  // a CPU op (done), or stream order
    if (host_wait) {
      TraceWait wait(WaitKind::kStream, other->Describe());
      other->Synchronize();
    } else {
      device.Wait(*slot.node_events[pred]);
    }
  }
}

void ActorGraph::LaunchTask(Task* task, Stream& stream) {
  Slot& slot = *slots_[task->slot];
  const uint32_t generation = task->countdown.generation();
  if (generation != slot.generation.load(std::memory_order_acquire)) return;  // left by an abort
  DeviceStream& device = *device_streams_[task->stream];
  const int node = task->node;
  if (task->kind == TaskKind::kKernel && !slot.cancelled.load(std::memory_order_relaxed)) {
    WaitForDeviceInputs(node, device, slot);
    const bool traced = slot.traced;
    const int lane = traced ? trace_lane(node) : 0;
    const int stream_index = stream.index_in_place();
    device.Launch([this, task, &slot, node, traced, lane, stream_index] {
      if (slot.cancelled.load(std::memory_order_relaxed)) return;
      const int64_t began = traced ? TraceRecorder::Now() : 0;
      if (traced) CurrentTrace() = {trace_, lane, trace_graph_, slot.iteration, 0};
      RunOrFail(slot, node, [task] { (*task->kernel)(*task->context); });
      if (traced) {
        TraceSpan(TraceEventKind::kKernel, lane, node, stream_index, began, slot);
        CurrentTrace() = {};
      }
    });
    device.Record(*slot.node_events[static_cast<size_t>(node)]);
  } else if (task->kind == TaskKind::kFeed) {
    const int feed = nodes_[node].feed_index;
    if (slot.feed_given[feed]) {
      slot.feed_vars[feed]->mutable_tensor()->ShareDataWith(slot.feed_values[feed]);
    }
  }
  stream.CountExecuted();
  Complete(task, slot, generation, &stream);
}

void ActorGraph::WaitForGradients(const Collective& c, Slot& slot) {
  for (int pred : graph_.ops[c.node].predecessors) {
    const Node& producer = nodes_[pred];
    if (producer.stream < 0 || device_streams_[producer.stream] == nullptr) continue;
    TraceWait wait(WaitKind::kBarrier, device_streams_[producer.stream]->Describe());
    slot.node_events[static_cast<size_t>(pred)]->Synchronize();
  }
}

bool ActorGraph::LaunchChunk(Task* chunk, const Collective& c, Slot& slot) {
  const int p = chunk->place;
  if (comm_streams_.empty() || comm_streams_[p] == nullptr) return false;
  DeviceStream& comm = *comm_streams_[p];
  if (!slot.cancelled.load(std::memory_order_relaxed)) {
    WaitForDeviceInputs(c.node, comm, slot);  // a chunk reads every place's gradient
    comm.Launch([this, chunk, &slot] {
      if (!slot.cancelled.load(std::memory_order_relaxed)) ReduceChunk(chunk, slot);
    });
    comm.Record(*slot.chunk_events[static_cast<size_t>(c.order * places() + p)]);
  }
  return true;
}

void ActorGraph::SynchronizeDevices(Slot& slot) {
  auto sync = [&](DeviceStream* stream) {
    if (stream == nullptr) return;
    try {
      stream->Synchronize();
    } catch (...) {
      FailSlot(slot, std::current_exception());
    }
  };
  for (auto& stream : device_streams_) sync(stream.get());
  for (auto& stream : comm_streams_) sync(stream.get());
}

}  // namespace rill
