// Device places: ops launched on device streams with events between them
// (actor_graph.h, "device places"). The same code drives the asynchronous
// CPU device (each stream a thread) and, with CUDA, GPU streams.
#include "actors/executor/actor_graph.h"
#include "actors/trace/trace_context.h"
#include "rill/device.h"

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
  bool device_memory = false;
  for (size_t p = 0; p < places_.size(); ++p) {
    if (places_[p].is_device()) comm_streams_[p] = NewDeviceStream(places_[p], "comm");
    device_memory |= !places_[p].host_memory();
  }
  if (device_memory) BuildCudaPlaces();
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

// Copy streams and NCCL for places with device memory. Their merges are
// NCCL sums of dense gradients over every place of the graph (a CUDA place
// each), written into every place's copy.
void ActorGraph::BuildCudaPlaces() {
  copy_streams_.resize(places_.size());
  std::vector<int> devices;
  for (size_t p = 0; p < places_.size(); ++p) {
    if (places_[p].host_memory()) continue;
    copy_streams_[p] = NewDeviceStream(places_[p], "copy");
    devices.push_back(places_[p].device);
  }
  if (collectives_.empty()) return;
  const std::string where = StrCat("merging gradients over ", places_.size(), " places");
  RILL_CHECK(devices.size() == places_.size(), kUnimplemented, where,
             ": CUDA places merge only with CUDA places (NCCL), not with ",
             places_[0].host_memory() ? places_[0].ToString() : places_.back().ToString());
  RILL_CHECK(build_.reduce == ReduceStrategy::kAllReduce, kUnimplemented, where,
             ": CUDA places merge by allreduce (NCCL); the reduce strategy is not supported");
  RILL_CHECK(build_.gradient_compression == GradientCompression::kNone, kUnimplemented, where,
             ": gradient compression is not supported on CUDA places");
  nccl_ = std::make_unique<NcclCommunicators>(devices);
}

void ActorGraph::WaitForDeviceInputs(int node, DeviceStream& device, Slot& slot) {
  const bool host_wait = strategy_.dependency_wait == DependencyWait::kStreamSync;
  const int n = places();
  for (int pred : graph_.ops[node].predecessors) {
    const Node& producer = nodes_[pred];
    if (producer.feed_index >= 0 && !copy_streams_.empty()) {
      const int place = feeds_[static_cast<size_t>(producer.feed_index)].place;
      if (DeviceStream* copy = copy_streams_[static_cast<size_t>(place)].get()) {
        if (host_wait) {
          TraceWait wait(WaitKind::kStream, copy->Describe());
          copy->Synchronize();
        } else {
          device.Wait(*slot.node_events[pred]);
        }
        continue;
      }
    }
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
    if (slot.feed_given[feed] && !slot.cancelled.load(std::memory_order_relaxed)) {
      StageFeed(node, feed, slot);
    }
  }
  stream.CountExecuted();
  Complete(task, slot, generation, &stream);
}

void ActorGraph::StageFeed(int node, int feed, Slot& slot) {
  const Tensor& value = slot.feed_values[feed];
  Tensor* var = slot.feed_vars[feed]->mutable_tensor();
  const int p = feeds_[static_cast<size_t>(feed)].place;
  const Place& place = places_[static_cast<size_t>(p)];
  if (place.host_memory() || value.place() == place) {
    var->ShareDataWith(value);
    return;
  }
  DeviceStream& copy = *copy_streams_[static_cast<size_t>(p)];
  RunOrFail(slot, node, [&] {
    // Into the variable's buffer of the slot's last iteration (done: the
    // devices were synchronised at its end), so steady feeding frees nothing.
    if (value.place().host_memory()) {
      StageToDevice(value, var, place, *slot.feed_staging[static_cast<size_t>(feed)], copy);
    } else {
      *var = value.CopyTo(place);
    }
    copy.Record(*slot.node_events[static_cast<size_t>(node)]);
  });
}

Tensor ActorGraph::FetchedToHost(const Tensor& value, int place, size_t fetch, Slot& slot) {
  if (value.place().host_memory()) return value;
  const size_t index = fetch * static_cast<size_t>(places()) + static_cast<size_t>(place);
  if (slot.fetch_staging.size() <= index) slot.fetch_staging.resize(index + 1);
  if (!slot.fetch_staging[index]) slot.fetch_staging[index] = std::make_unique<PinnedStaging>();
  return StageToHost(value, *slot.fetch_staging[index], *copy_streams_[static_cast<size_t>(place)]);
}

void ActorGraph::MoveParametersToDevices(Slot& slot) {
  const proto::BlockDesc& block = plan_.program.blocks(block_index_);
  std::lock_guard<std::mutex> lock(device_parameters_mutex_);
  for (int p = 0; p < places(); ++p) {
    const Place& place = places_[static_cast<size_t>(p)];
    if (place.host_memory()) continue;
    for (const auto& desc : block.vars()) {
      if (!desc.persistable() || desc.kind() != proto::DENSE_TENSOR) continue;
      Variable* var = slot.place_scopes[static_cast<size_t>(p)]->FindVar(desc.name());
      if (var == nullptr || var->holds_selected_rows()) continue;
      const Tensor& t = var->tensor();
      if (t.initialized() && t.place() != place) *var->mutable_tensor() = t.CopyTo(place);
    }
  }
}

void ActorGraph::MergeOnNccl(Task* task, const Collective& c, Slot& slot, uint32_t generation) {
  const int n = places();
  const bool traced = slot.traced;
  if (traced) slot.collective_issue_ns[static_cast<size_t>(c.order)] = TraceRecorder::Now();
  // Plain references: clang before 16 cannot capture structured bindings.
  int64_t& raw_bytes = slot.collective_bytes[static_cast<size_t>(c.order)].first;
  int64_t& merged_bytes = slot.collective_bytes[static_cast<size_t>(c.order)].second;
  raw_bytes = merged_bytes = 0;
  if (!slot.cancelled.load(std::memory_order_relaxed)) {
    RunOrFail(slot, c.node, [&] {
      const auto& vars = slot.collective_vars[c.order];
      std::vector<std::vector<void*>> buffers(c.members.size());
      std::vector<int64_t> counts;
      std::vector<DataType> dtypes;
      for (size_t m = 0; m < c.members.size(); ++m) {
        const Variable& first = *vars[m * (n + 1)];
        RILL_CHECK(!first.holds_selected_rows(), kUnimplemented, "gradient \"", c.members[m],
                   "\" holds selected rows: CUDA places merge dense gradients only (NCCL)");
        const Tensor& t0 = CheckGradientsAlike(c, m, slot);
        for (int q = 0; q < n; ++q) {
          buffers[m].push_back(vars[m * (n + 1) + q]->mutable_tensor()->raw_data());
        }
        counts.push_back(t0.numel());
        dtypes.push_back(t0.dtype());
        raw_bytes += n * static_cast<int64_t>(t0.bytes());
      }
      merged_bytes = raw_bytes;
      std::vector<DeviceStream*> streams;
      for (int p = 0; p < n; ++p) {
        DeviceStream& comm = *comm_streams_[static_cast<size_t>(p)];
        WaitForDeviceInputs(c.node, comm, slot);  // this place's gradients (and the others')
        streams.push_back(&comm);
      }
      nccl_->AllReduceSum(buffers, counts, dtypes, streams);
      for (int p = 0; p < n; ++p) {
        comm_streams_[static_cast<size_t>(p)]->Record(
            *slot.chunk_events[static_cast<size_t>(c.order * n + p)]);
      }
    });
  }
  if (traced) {
    TraceSpan(TraceEventKind::kCollective, trace_lane(c.node), c.node, -1,
              slot.collective_issue_ns[static_cast<size_t>(c.order)], slot, merged_bytes,
              raw_bytes);
  }
  Complete(task, slot, generation, nullptr);
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
  for (auto& stream : copy_streams_) sync(stream.get());
}

}  // namespace rill
