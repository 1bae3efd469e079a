// What a run is fed and how what it fetches comes back: FeedList, the values
// of fed variables by name; FetchMerge, how a fetched variable's values on
// several places (ParallelExecutor) become one tensor.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "rill/tensor.h"

namespace rill {

using FeedList = std::vector<std::pair<std::string, Tensor>>;

enum class FetchMerge {
  kConcat,  // per-example outputs (declared with a batch dim): rows in place order
  kMean,    // one-element values (losses, accuracies): mean weighted by each place's rows
  kFirst,   // everything else (parameters, which all places hold alike): place 0's
};

}  // namespace rill
