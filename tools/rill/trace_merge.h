// Merges the trace files of several processes into one (`rill trace merge`),
// on one time axis and with every id kept unique. For the k-th input (from 0):
//
//   ts        += ((origin_wall_ns + offset_ns)_k - the least of those) / 1000 µs
//   pid       += 1000 k                 (events, rill.lanes)
//   tid       += 100000 k               (events, rill.lanes, graph nodes, parent_lane,
//                                        driver_lane, args.from / args.to of messages)
//   graph id  += 1000 k                 (args.graph, rill.lanes, rill.graphs)
//   flow id   += k * a power of ten above twice the largest |id|; a string id
//                gets a "k:" prefix
//   process_name  "<rill.node>: <name>"; process_sort_index += 1000 k
//
// The output's `rill` has node "merged", inputs (each input's rill.node),
// clock.origin_wall_ns the least aligned origin (offset_ns 0), dropped_events
// summed, and the lanes and graphs of all inputs. Other top-level keys of the
// inputs are dropped.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace rill::trace {

// `inputs` are trace documents (ParseTraceJson); `paths` name them in errors.
// Throws rill::Error kInvalidArgument for an input without
// rill.clock.origin_wall_ns, or with pids, tids or graph ids too large to
// shift apart (an input that is itself merged).
nlohmann::json MergeTraces(std::vector<nlohmann::json> inputs,
                           const std::vector<std::string>& paths);

// Loads `in_paths`, merges them, and writes the result to `out_path`.
void MergeTraceFiles(const std::string& out_path, const std::vector<std::string>& in_paths);

}  // namespace rill::trace
