// Where the wall time of a graph's traced iterations goes, place by place
// (`rill trace summarize`, "time split"): the part of a data-parallel step
// that does not shrink with more places is what limits its speedup.
//
// Over the traced iterations of one graph (the `iteration` events of the
// driver lane, each from Run to the merged fetches) and the gaps between
// consecutive ones (the driver's loop: the next batch, Run's feed checks, the
// caller's own work), the time is cut into:
//   between        gaps between consecutive iterations (the driver alone)
//   before_first   from an iteration's start to its first kernel
//   after_last     from its last kernel to its end
//   all_places     at least one kernel running on every place
//   some_places    kernels running on some places but not all (a slice one
//                  place finishes later, a place idle at a merge barrier)
//   no_place       within the kernels' span, none running on any place
// Kernels are `X` events of cat `kernel` with args.place >= 0 (collective
// chunks included: a place reducing its chunk is busy); `merge_us` adds the
// time the places spent in allreduce chunks, `barrier_us` the time they
// waited at merge barriers (cat `wait`). Serial fraction: everything but
// all_places, over the total.
#pragma once

#include <cstdint>
#include <optional>

#include "tools/rill/trace_file.h"

namespace rill::trace {

struct ParallelSplit {
  int64_t graph = 0;
  int64_t iterations = 0;
  int64_t places = 0;
  double total_us = 0;  // iterations plus the gaps between them
  double between_us = 0;
  double before_first_us = 0;
  double after_last_us = 0;
  double all_places_us = 0;
  double some_places_us = 0;
  double no_place_us = 0;
  double kernel_us = 0;   // summed over places
  double merge_us = 0;    // of kernel_us: collective chunks
  double barrier_us = 0;  // summed over places
  double serial_fraction() const { return total_us > 0 ? 1 - all_places_us / total_us : 0; }
};

// nullopt when the graph has no traced iteration with kernels on a place.
std::optional<ParallelSplit> SplitParallelTime(const Trace& trace, int64_t graph);

}  // namespace rill::trace
