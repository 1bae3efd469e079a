#include "rill/trace_recorder.h"

#include <cstdlib>
#include <fstream>

#include "rill/error.h"
#include "rill/log.h"

namespace rill {
namespace {

std::atomic<uint64_t> next_serial{1};

// A thread's buffers in the recorders it recorded into lately: the common
// case (one recorder) costs one compare.
struct CacheEntry {
  uint64_t serial = 0;
  void* buffer = nullptr;
};
constexpr int kCacheEntries = 4;
thread_local CacheEntry cache[kCacheEntries];
thread_local int cache_next = 0;

int64_t WallNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

const char* MessageKindName(MessageKind kind) {
  switch (kind) {
    case MessageKind::kData: return "data";
    case MessageKind::kControl: return "control";
    case MessageKind::kWake: return "wake";
    case MessageKind::kChunk: return "chunk";
    case MessageKind::kNetwork: return "network";
  }
  return "?";
}

const char* WaitKindName(WaitKind kind) {
  switch (kind) {
    case WaitKind::kBarrier: return "barrier";
    case WaitKind::kStream: return "stream";
    case WaitKind::kChannel: return "channel";
    case WaitKind::kParallelBlock: return "parallel block";
    case WaitKind::kParameterServer: return "parameter server";
    case WaitKind::kNetwork: return "network";
  }
  return "?";
}

TraceRecorder::TraceRecorder(Options options)
    : options_(options),
      serial_(next_serial.fetch_add(1)),
      origin_ns_(Now()),
      origin_wall_ns_(WallNowNs()),
      on_(options.start_on) {
  RILL_CHECK(options_.max_events > 0, kInvalidArgument, "trace: max_events must be positive, not ",
             options_.max_events);
}

TraceRecorder::~TraceRecorder() = default;

std::shared_ptr<TraceRecorder> TraceRecorder::FromEnvironment() {
  static std::shared_ptr<TraceRecorder> recorder = [] {
    std::shared_ptr<TraceRecorder> made;
    const char* path = std::getenv("RILL_TRACE");
    if (path == nullptr || *path == '\0') return made;
    Options options;
    if (const char* max = std::getenv("RILL_TRACE_MAX_EVENTS")) {
      options.max_events = std::max<int64_t>(1, std::atoll(max));
    }
    made = std::make_shared<TraceRecorder>(options);
    // Constructed (and so destroyed) before the handler is registered: it
    // still holds the recorder when the handler runs at exit.
    static std::string file = path;
    static std::shared_ptr<TraceRecorder> at_exit = made;
    std::atexit([] {
      try {
        at_exit->WriteFile(file);
        Log(LogLevel::kInfo, "trace written to ", file);
      } catch (const std::exception& e) {
        Log(LogLevel::kError, e.what());
      }
    });
    return made;
  }();
  return recorder;
}

std::shared_ptr<TraceRecorder> TraceRecorder::ForProcess() {
  static std::shared_ptr<TraceRecorder> recorder = [] {
    std::shared_ptr<TraceRecorder> made = FromEnvironment();
    if (!made) made = std::make_shared<TraceRecorder>(Options{.start_on = false});
    return made;
  }();
  return recorder;
}

TraceRecorder::Buffer* TraceRecorder::LocalBuffer() {
  for (const CacheEntry& entry : cache) {
    if (entry.serial == serial_) return static_cast<Buffer*>(entry.buffer);
  }
  Buffer* buffer = FindOrAddBuffer();
  cache[cache_next] = {serial_, buffer};
  cache_next = (cache_next + 1) % kCacheEntries;
  return buffer;
}

TraceRecorder::Buffer* TraceRecorder::FindOrAddBuffer() {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& buffer = buffers_[std::this_thread::get_id()];
  if (!buffer) buffer = std::make_unique<Buffer>(options_.max_events / kChunkEvents + 1);
  return buffer.get();
}

bool TraceRecorder::Buffer::Grow(TraceRecorder* recorder) {
  const int64_t count = chunk_count.load(std::memory_order_relaxed);
  if (count == static_cast<int64_t>(chunks.size())) return false;
  if (recorder->reserved_.fetch_add(kChunkEvents, std::memory_order_relaxed) >=
      recorder->options_.max_events) {
    return false;
  }
  chunks[static_cast<size_t>(count)] = std::make_unique<TraceEvent[]>(kChunkEvents);
  chunk_count.store(count + 1, std::memory_order_release);
  used = 0;
  return true;
}

int TraceRecorder::AddLane(TraceLane lane) {
  std::lock_guard<std::mutex> lock(mutex_);
  lanes_.push_back(std::move(lane));
  return static_cast<int>(lanes_.size());
}

int TraceRecorder::AddGraph(TraceGraph graph) {
  std::lock_guard<std::mutex> lock(mutex_);
  graphs_.push_back(std::move(graph));
  return static_cast<int>(graphs_.size()) - 1;
}

void TraceRecorder::UpdateGraph(int id, TraceGraph graph) {
  std::lock_guard<std::mutex> lock(mutex_);
  graphs_.at(static_cast<size_t>(id)) = std::move(graph);
}

void TraceRecorder::SetProcessName(int pid, std::string name) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [known, existing] : process_names_) {
    if (known == pid) return;
  }
  process_names_.emplace_back(pid, std::move(name));
}

int TraceRecorder::Intern(const std::string& text) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto [it, added] = text_ids_.emplace(text, static_cast<int>(texts_.size()));
  if (added) texts_.push_back(text);
  return it->second;
}

std::string TraceRecorder::Text(int id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return id >= 0 && id < static_cast<int>(texts_.size()) ? texts_[static_cast<size_t>(id)] : "";
}

std::vector<TraceEvent> TraceRecorder::Events() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<TraceEvent> events;
  for (const auto& [thread, buffer] : buffers_) {
    const int64_t n = buffer->published.load(std::memory_order_acquire);
    for (int64_t i = 0; i < n; ++i) {
      events.push_back(buffer->chunks[static_cast<size_t>(i / kChunkEvents)][i % kChunkEvents]);
    }
  }
  return events;
}

int64_t TraceRecorder::dropped() const {
  std::lock_guard<std::mutex> lock(mutex_);
  int64_t total = 0;
  for (const auto& [thread, buffer] : buffers_) {
    total += buffer->dropped.load(std::memory_order_relaxed);
  }
  return total;
}

std::vector<TraceLane> TraceRecorder::lanes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return lanes_;
}

std::vector<TraceGraph> TraceRecorder::graphs() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return graphs_;
}

void TraceRecorder::WriteFile(const std::string& path, int64_t since_ns) const {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  RILL_CHECK(out.good(), kInvalidArgument, "trace: cannot write \"", path, "\"");
  WriteJson(out, since_ns);
  out.close();
  RILL_CHECK(!out.fail(), kInvalidArgument, "trace: writing \"", path, "\" failed");
}

}  // namespace rill
