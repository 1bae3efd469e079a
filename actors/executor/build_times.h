// BuildTimes: where the time of building a ParallelExecutor went, stage by
// stage, as the executor's own build steps measured it (rill bench dag prints
// it). The stages run one after the other on the constructing thread, so
// their sum is the constructor's time. Not part of the public API: read it
// with BuildTimesOf (graph_of.h).
#pragma once

#include <chrono>

namespace rill {

struct BuildTimes {
  double runtime_ms = 0;   // the CAF actor system, when the executor owns one
  double validate_ms = 0;  // Validate(program)
  double plan_ms = 0;      // the data-parallel plan (the program copied, rewritten for places),
                           // its declarations indexed
  double scopes_ms = 0;    // every slot's scope variables
  double contexts_ms = 0;  // every slot's kernel contexts
  double graph_ms = 0;     // the SSA graph: versions, hazards, costs, streams
  double nodes_ms = 0;     // BuiltGraph (nodes, successor lists, releases) and the graph's parts
  double tasks_ms = 0;     // every slot's tasks, merge state, feeds; the parts' per-slot state
  double actors_ms = 0;    // the stream, custom op and watchdog actors spawned

  double total_ms() const {
    return runtime_ms + validate_ms + plan_ms + scopes_ms + contexts_ms + graph_ms + nodes_ms +
           tasks_ms + actors_ms;
  }
};

// Milliseconds between calls of Lap, for timing consecutive build stages:
//   BuildStopwatch watch;
//   Validate(program);
//   times.validate_ms = watch.Lap();
class BuildStopwatch {
 public:
  double Lap() {
    const auto now = std::chrono::steady_clock::now();
    const double ms = std::chrono::duration<double, std::milli>(now - last_).count();
    last_ = now;
    return ms;
  }

 private:
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

}  // namespace rill
