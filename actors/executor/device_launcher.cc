#include "actors/executor/device_launcher.h"

#include "actors/trace/trace_context.h"
#include "rill/device.h"

namespace rill {

DeviceLauncher::DeviceLauncher(const BuiltGraph& graph,
                               const std::vector<std::unique_ptr<Stream>>& streams,
                               const BuildStrategy& build, DependencyWait wait)
    : graph_(graph), wait_(wait) {
  const std::vector<Place>& places = graph.place_list;
  bool any = false;
  for (const Place& place : places) any |= place.is_device();
  if (!any) return;
  device_streams_.resize(streams.size());
  comm_streams_.resize(places.size());
  for (const auto& stream : streams) {
    const Place& place = places[stream->place()];
    if (!place.is_device()) continue;
    device_streams_[stream->id()] =
        NewDeviceStream(place, StrCat("compute ", stream->index_in_place()));
  }
  bool device_memory = false;
  for (size_t p = 0; p < places.size(); ++p) {
    if (places[p].is_device()) comm_streams_[p] = NewDeviceStream(places[p], "comm");
    device_memory |= !places[p].host_memory();
  }
  if (device_memory) BuildCudaPlaces(build);
}

// Copy streams and NCCL for places with device memory. Their merges are
// NCCL sums of dense gradients over every place of the graph (a CUDA place
// each), written into every place's copy.
void DeviceLauncher::BuildCudaPlaces(const BuildStrategy& build) {
  const std::vector<Place>& places = graph_.place_list;
  copy_streams_.resize(places.size());
  std::vector<int> devices;
  for (size_t p = 0; p < places.size(); ++p) {
    if (places[p].host_memory()) continue;
    copy_streams_[p] = NewDeviceStream(places[p], "copy");
    devices.push_back(places[p].device);
  }
  if (graph_.merges.empty()) return;
  const std::string where = StrCat("merging gradients over ", places.size(), " places");
  RILL_CHECK(devices.size() == places.size(), kUnimplemented, where,
             ": CUDA places merge only with CUDA places (NCCL), not with ",
             places[0].host_memory() ? places[0].ToString() : places.back().ToString());
  RILL_CHECK(build.reduce == ReduceStrategy::kAllReduce, kUnimplemented, where,
             ": CUDA places merge by allreduce (NCCL); the reduce strategy is not supported");
  RILL_CHECK(build.gradient_compression == GradientCompression::kNone, kUnimplemented, where,
             ": gradient compression is not supported on CUDA places");
  nccl_ = std::make_unique<NcclCommunicators>(devices);
}

void DeviceLauncher::PrepareSlot(IterationSlot& slot) const {
  if (!any()) return;
  const int n = graph_.places();
  // Events of a device place come from one of its streams (CUDA events
  // belong to a device); CPU places' nodes get none.
  slot.node_events.resize(graph_.nodes.size());
  for (const OpNode& op : graph_.ssa.ops) {
    if (op.place >= 0 && comm_streams_[op.place] != nullptr) {
      slot.node_events[op.id] = comm_streams_[op.place]->NewEvent();
    }
  }
  slot.feed_staging.resize(graph_.feeds.size());
  for (auto& staging : slot.feed_staging) staging = std::make_unique<PinnedStaging>();
  slot.chunk_events.resize(graph_.merges.size() * static_cast<size_t>(n));
  for (size_t c = 0; c < graph_.merges.size(); ++c) {
    for (int p = 0; p < n; ++p) {
      if (comm_streams_[p] == nullptr) continue;
      slot.chunk_events[c * static_cast<size_t>(n) + static_cast<size_t>(p)] =
          comm_streams_[p]->NewEvent();
    }
  }
}

void DeviceLauncher::WaitForDeviceInputs(int node, DeviceStream& device, IterationSlot& slot) {
  const bool host_wait = wait_ == DependencyWait::kStreamSync;
  const int n = graph_.places();
  for (int pred : graph_.ssa.ops[node].predecessors) {
    const BuiltGraph::Node& producer = graph_.nodes[pred];
    if (producer.feed_index >= 0 && !copy_streams_.empty()) {
      const int place = graph_.feeds[static_cast<size_t>(producer.feed_index)].place;
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
    if (producer.merge >= 0) {  // written by every place's chunk
      for (int q = 0; q < n; ++q) {
        if (comm_streams_[q] == nullptr) continue;
        if (host_wait) {
          comm_streams_[q]->Synchronize();
        } else {
          device.Wait(*slot.chunk_events[static_cast<size_t>(producer.merge * n + q)]);
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

void DeviceLauncher::LaunchKernel(const Task& task, IterationSlot& slot,
                                  DeviceStream::Work kernel) {
  DeviceStream& device = *device_streams_[task.stream];
  WaitForDeviceInputs(task.node, device, slot);
  device.Launch(std::move(kernel));
  device.Record(*slot.node_events[static_cast<size_t>(task.node)]);
}

void DeviceLauncher::StageFeed(int node, int feed, IterationSlot& slot) {
  const Tensor& value = slot.feed_values[feed];
  Tensor* var = slot.feed_vars[feed]->mutable_tensor();
  const int p = graph_.feeds[static_cast<size_t>(feed)].place;
  const Place& place = graph_.place_list[static_cast<size_t>(p)];
  if (place.host_memory() || value.place() == place) {
    var->ShareDataWith(value);
    return;
  }
  DeviceStream& copy = *copy_streams_[static_cast<size_t>(p)];
  // Into the variable's buffer of the slot's last iteration (done: the
  // devices were synchronised at its end), so steady feeding frees nothing.
  if (value.place().host_memory()) {
    StageToDevice(value, var, place, *slot.feed_staging[static_cast<size_t>(feed)], copy);
  } else {
    *var = value.CopyTo(place);
  }
  copy.Record(*slot.node_events[static_cast<size_t>(node)]);
}

Tensor DeviceLauncher::FetchedToHost(const Tensor& value, int place, size_t fetch,
                                     IterationSlot& slot) {
  if (value.place().host_memory()) return value;
  const size_t index = fetch * static_cast<size_t>(graph_.places()) + static_cast<size_t>(place);
  if (slot.fetch_staging.size() <= index) slot.fetch_staging.resize(index + 1);
  if (!slot.fetch_staging[index]) slot.fetch_staging[index] = std::make_unique<PinnedStaging>();
  return StageToHost(value, *slot.fetch_staging[index], *copy_streams_[static_cast<size_t>(place)]);
}

void DeviceLauncher::MoveParametersToDevices(IterationSlot& slot) {
  const proto::BlockDesc& block = graph_.plan.program().blocks(graph_.block_index());
  std::lock_guard<std::mutex> lock(parameters_mutex_);
  for (int p = 0; p < graph_.places(); ++p) {
    const Place& place = graph_.place_list[static_cast<size_t>(p)];
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

void DeviceLauncher::AllReduceOnNccl(const GradientMerge& merge, MergeState& state,
                                     IterationSlot& slot, const GradientMerger& merger) {
  const int n = graph_.places();
  std::vector<std::vector<void*>> buffers(merge.members.size());
  std::vector<int64_t> counts;
  std::vector<DataType> dtypes;
  for (size_t m = 0; m < merge.members.size(); ++m) {
    const Variable& first = *state.vars[m * (n + 1)];
    RILL_CHECK(!first.holds_selected_rows(), kUnimplemented, "gradient \"", merge.members[m],
               "\" holds selected rows: CUDA places merge dense gradients only (NCCL)");
    const Tensor& t0 = merger.CheckGradientsAlike(merge, state, m);
    for (int q = 0; q < n; ++q) {
      buffers[m].push_back(state.vars[m * (n + 1) + q]->mutable_tensor()->raw_data());
    }
    counts.push_back(t0.numel());
    dtypes.push_back(t0.dtype());
    state.raw_bytes += n * static_cast<int64_t>(t0.bytes());
  }
  state.merged_bytes = state.raw_bytes;
  std::vector<DeviceStream*> streams;
  for (int p = 0; p < n; ++p) {
    DeviceStream& comm = *comm_streams_[static_cast<size_t>(p)];
    WaitForDeviceInputs(merge.node, comm, slot);  // this place's gradients (and the others')
    streams.push_back(&comm);
  }
  nccl_->AllReduceSum(buffers, counts, dtypes, streams);
  for (int p = 0; p < n; ++p) {
    comm_streams_[static_cast<size_t>(p)]->Record(
        *slot.chunk_events[static_cast<size_t>(merge.order * n + p)]);
  }
}

void DeviceLauncher::WaitForGradients(const GradientMerge& merge, IterationSlot& slot) {
  for (int pred : graph_.ssa.ops[merge.node].predecessors) {
    const BuiltGraph::Node& producer = graph_.nodes[pred];
    if (producer.stream < 0 || device_streams_[producer.stream] == nullptr) continue;
    TraceWait wait(WaitKind::kBarrier, device_streams_[producer.stream]->Describe());
    slot.node_events[static_cast<size_t>(pred)]->Synchronize();
  }
}

bool DeviceLauncher::LaunchChunk(const Task& chunk, const GradientMerge& merge, IterationSlot& slot,
                                 DeviceStream::Work reduce) {
  const int p = chunk.place;
  if (comm_streams_.empty() || comm_streams_[p] == nullptr) return false;
  DeviceStream& comm = *comm_streams_[p];
  WaitForDeviceInputs(merge.node, comm, slot);  // a chunk reads every place's gradient
  comm.Launch(std::move(reduce));
  comm.Record(*slot.chunk_events[static_cast<size_t>(merge.order * graph_.places() + p)]);
  return true;
}

void DeviceLauncher::SynchronizeDevices(IterationSlot& slot) {
  auto sync = [&](DeviceStream* stream) {
    if (stream == nullptr) return;
    try {
      stream->Synchronize();
    } catch (...) {
      slot.Fail(std::current_exception());
    }
  };
  for (auto& stream : device_streams_) sync(stream.get());
  for (auto& stream : comm_streams_) sync(stream.get());
  for (auto& stream : copy_streams_) sync(stream.get());
}

void DeviceLauncher::Stop() {
  device_streams_.clear();
  comm_streams_.clear();
}

}  // namespace rill
