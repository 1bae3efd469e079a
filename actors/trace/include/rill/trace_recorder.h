// TraceRecorder: what the actor executor did, event by event — kernels,
// the messages actors send each other, waits at barriers, streams and
// channels, iterations — for `rill trace` and the visualizer. Written as a
// Chrome trace-event JSON file (actors/trace/trace_format.md).
//
//   auto trace = std::make_shared<TraceRecorder>();
//   ExecutionStrategy strategy;
//   strategy.trace = trace;                  // the executor records while it is on
//   ParallelExecutor exe(main, &scope, {.places = places, .strategy = strategy});
//   exe.Run(feeds, {"loss"});
//   trace->Stop();
//   trace->WriteFile("trace.json");
//
// Recording is lock-free: every thread appends to a buffer of its own
// (found through a thread-local cache; a lock is taken only the first time
// a thread records). Memory is bounded by Options::max_events: past it
// events are counted as dropped, never blocking or failing the run. Lanes
// (one per actor) and graphs are registered when an executor is built.
// Writing a file while runs are in flight sees what was recorded so far.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace rill {

enum class TraceEventKind : uint8_t {
  kKernel,      // an op's kernel (or a feed, a gradient-merge chunk) on its lane
  kCollective,  // a gradient merge: from its barrier's release to its last chunk's end
  kWait,        // an actor waiting (WaitKind)
  kIteration,   // one iteration of a graph, on its driver lane
  kMessage,     // a message sent (MessageKind); begin_ns is the send
  kReceive,     // the receiver's handling of a message matched by id (wake, network)
  kSend,        // a gradient pushed to a parameter server (detail: the variable; bytes, raw_bytes)
};

enum class MessageKind : uint8_t { kData, kControl, kWake, kChunk, kNetwork };
enum class WaitKind : uint8_t {
  kBarrier,
  kStream,
  kChannel,
  kParallelBlock,
  kParameterServer,
  kNetwork,
};

const char* MessageKindName(MessageKind kind);
const char* WaitKindName(WaitKind kind);

struct TraceEvent {
  int64_t begin_ns = 0;  // steady clock
  int64_t end_ns = 0;
  int64_t bytes = 0;      // a message's payload; a gradient merge's bytes as merged
  int64_t raw_bytes = 0;  // the same before compression (0: not compressed or not counted)
  uint32_t id = 0;        // pairs a message with its kReceive
  int32_t lane = 0;       // the actor (a message's sender)
  int32_t peer = 0;       // a message's receiver; a kernel's stream within its place
  int32_t node = -1;      // graph node
  int32_t iteration = -1;
  int32_t detail = -1;  // interned text: a message's variable, what a wait waits for
  uint16_t graph = 0;
  TraceEventKind kind = TraceEventKind::kKernel;
  uint8_t sub = 0;  // MessageKind or WaitKind
};

// One actor's row in the trace.
struct TraceLane {
  int pid = 1;       // 1: the executor; place p: p + 2
  std::string kind;  // driver, op, stream, collective, chunk
  std::string name;
  int graph = -1;
  int node = -1;
  int place = -1;
};

// A graph as the trace shows it (the SSA graph the executor runs).
struct TraceGraph {
  struct Node {
    int id = 0;
    std::string type;
    int op = -1;  // index in the block; -1 for feeds and collectives
    int place = -1;
    int stream = -1;
    std::string kind;  // compute, feed, collective
    std::string role;  // forward, backward, optimize, other
    int lane = 0;
    int collective = -1;           // a collective's order
    std::vector<int> chunk_lanes;  // a collective's, by place
  };
  struct Edge {
    int from = 0;
    int to = 0;
    std::string var;
    bool control = false;
  };
  int block = 0;
  int parent_lane = -1;
  int places = 1;
  int streams_per_place = 1;
  int driver_lane = 0;
  std::vector<Node> nodes;
  std::vector<Edge> edges;
};

class TraceRecorder {
 public:
  struct Options {
    int64_t max_events = int64_t{1} << 21;  // ~112 MB of events at most
    bool start_on = true;
  };
  TraceRecorder() : TraceRecorder(Options{}) {}
  explicit TraceRecorder(Options options);
  ~TraceRecorder();
  TraceRecorder(const TraceRecorder&) = delete;
  TraceRecorder& operator=(const TraceRecorder&) = delete;

  // The recorder named by the environment (RILL_TRACE=FILE, optional
  // RILL_TRACE_MAX_EVENTS), shared by every executor of the process and
  // written to FILE at exit; null when RILL_TRACE is unset.
  static std::shared_ptr<TraceRecorder> FromEnvironment();
  // The recorder a front end attaches to every executor it builds, so that
  // it can trace steps of executors built before (rill.trace in Python):
  // FromEnvironment()'s when RILL_TRACE is set, else one made off on first
  // use and kept until exit. Write a window of it (WriteFile's since_ns).
  static std::shared_ptr<TraceRecorder> ForProcess();

  // Executors record only while the recorder is on; an iteration that began
  // while it was on is recorded to its end.
  void Start() { on_.store(true, std::memory_order_relaxed); }
  void Stop() { on_.store(false, std::memory_order_relaxed); }
  bool on() const { return on_.load(std::memory_order_relaxed); }

  static int64_t Now() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  // -- the hot path: any thread --------------------------------------------------
  void Record(const TraceEvent& event) {
    Buffer* buffer = LocalBuffer();
    if (buffer->used == kChunkEvents && !buffer->Grow(this)) {
      buffer->dropped.store(buffer->dropped.load(std::memory_order_relaxed) + 1,
                            std::memory_order_relaxed);
      return;
    }
    buffer->chunks[buffer->chunk_count.load(std::memory_order_relaxed) - 1][buffer->used++] = event;
    buffer->published.store(buffer->published.load(std::memory_order_relaxed) + 1,
                            std::memory_order_release);
  }
  // A fresh id for a message matched with its receive.
  uint32_t NextMessageId() { return next_id_.fetch_add(1, std::memory_order_relaxed); }

  // -- registration (when executors are built) -----------------------------------
  int AddLane(TraceLane lane);     // returns the lane id (the trace's tid), from 1
  int AddGraph(TraceGraph graph);  // returns the graph id
  void SetProcessName(int pid, std::string name);
  int Intern(const std::string& text);  // a stable id for `text`
  // Fills in what AddGraph could not know yet (lanes assigned after it).
  void UpdateGraph(int id, TraceGraph graph);

  // -- reading -----------------------------------------------------------------------
  // Every event recorded so far, in no particular order.
  std::vector<TraceEvent> Events() const;
  int64_t dropped() const;
  std::vector<TraceLane> lanes() const;
  std::vector<TraceGraph> graphs() const;
  std::string Text(int id) const;
  // Chrome trace-event JSON (actors/trace/trace_format.md). Throws kInvalidArgument
  // when the file cannot be written. With since_ns (a Now() value, taken when
  // the recorder was switched on), only the events that began from then on,
  // with just the graphs and lanes they belong to, renumbered: graph 0 is the
  // first executor built that ran since (actors/trace/trace_window.h).
  void WriteJson(std::ostream& out, int64_t since_ns = 0) const;
  void WriteFile(const std::string& path, int64_t since_ns = 0) const;

  int64_t origin_ns() const { return origin_ns_; }
  int64_t origin_wall_ns() const { return origin_wall_ns_; }

 private:
  static constexpr int64_t kChunkEvents = 4096;
  // One thread's events, in chunks. Only the owner thread appends; readers
  // see the first `published` events.
  struct Buffer {
    explicit Buffer(int64_t max_chunks) : chunks(static_cast<size_t>(max_chunks)) {}
    bool Grow(TraceRecorder* recorder);
    std::vector<std::unique_ptr<TraceEvent[]>> chunks;  // sized once: never reallocated
    std::atomic<int64_t> chunk_count{0};
    int64_t used = kChunkEvents;  // in the last chunk (full: none yet)
    std::atomic<int64_t> published{0};
    std::atomic<int64_t> dropped{0};
  };
  Buffer* LocalBuffer();
  Buffer* FindOrAddBuffer();

  const Options options_;
  const uint64_t serial_;  // tells this recorder from earlier ones at the same address
  const int64_t origin_ns_;
  const int64_t origin_wall_ns_;
  std::atomic<bool> on_;
  std::atomic<uint32_t> next_id_{1};
  std::atomic<int64_t> reserved_{0};  // events granted to buffers

  mutable std::mutex mutex_;
  std::unordered_map<std::thread::id, std::unique_ptr<Buffer>> buffers_;  // guarded
  std::vector<TraceLane> lanes_;                                          // guarded
  std::vector<TraceGraph> graphs_;                                        // guarded
  std::vector<std::pair<int, std::string>> process_names_;                // guarded
  std::vector<std::string> texts_;                                        // guarded
  std::unordered_map<std::string, int> text_ids_;                         // guarded
};

}  // namespace rill
