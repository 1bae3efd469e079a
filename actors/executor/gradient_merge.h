// Gradient merges across places. With several places, every gradient (or
// bucket of small ones, up to BuildStrategy::fuse_bytes) has one collective
// node: a barrier whose countdown waits for the gradient from every place.
// Then each place reduces one contiguous chunk of the bucket over all places,
// summing the places' values in place order, so the sum is the same bits run
// after run and on every place; the last chunk to finish completes the node
// and releases the optimizer ops. kReduce writes the sum into one shared copy,
// kAllReduce into every place's copy. Selected rows are merged whole (rows
// concatenated in place order, repeats summed).
//
// With gradient compression each place's contribution is quantized with that
// place's error feedback (runtime/graph/gradient_compression.h), in pieces on
// the member's 256-value grid cut by the chunk ranges, and the chunk sums what
// the codes read back; selected rows are compressed whole, each place's rows
// merged first so that its residual row is added once.
//
// GradientMerge describes one merge (immutable), MergeState is its state in
// one iteration slot, and GradientMerger does the arithmetic and keeps the
// compression residuals. Chunks of one merge touch disjoint ranges; merges of
// one slot never overlap with the same merge of another slot (training runs
// one iteration at a time).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "actors/executor/countdown.h"
#include "rill/build_strategy.h"
#include "rill/scope.h"

namespace rill {

struct Task;
class DeviceEvent;

struct GradientMerge {
  int node = -1;                     // the collective node
  int order = 0;                     // its position in the order every place issues merges in
  bool reduce = false;               // into the shared copy (else into every place's)
  std::vector<std::string> members;  // gradient variables
};

// One merge in one iteration slot.
struct MergeState {
  // Member m's variable on place p at [m * (places + 1) + p]; the shared copy at p = places.
  std::vector<Variable*> vars;
  // By member, decided when the merge is issued (before its chunks run): the
  // gradient is selected rows this iteration; the places' contributions are quantized.
  std::vector<uint8_t> sparse;
  std::vector<uint8_t> compressed;
  // Bytes of the places' contributions as float32 and as merged (IterationStats):
  // dense members counted at issue, selected rows by the chunk that merges them;
  // read once the last chunk has finished.
  int64_t raw_bytes = 0;
  int64_t merged_bytes = 0;
  Countdown chunks_left;   // chunks of this iteration still running
  Task* chunks = nullptr;  // one per place, in the slot's chunk array
  int64_t issued_ns = 0;   // when it was issued (traced iterations)
};

class GradientMerger {
 public:
  GradientMerger(int places, const BuildStrategy& build, size_t merges);

  // When `merge` is issued: decides which members are selected rows and which
  // are compressed this iteration, counts the dense members' bytes, sizes the
  // residuals and, for kReduce, shapes the shared copies the chunks write into
  // (`allocate_shared`: false once the iteration is cancelled).
  void Prepare(const GradientMerge& merge, MergeState& state, bool allocate_shared);
  // Place `place`'s chunk of `merge`: its range of every dense member summed
  // over the places (compressed contributions quantized first); place 0 also
  // merges the selected-rows members whole. Throws rill::Error naming the
  // member and the place when the places' gradients differ.
  void ReduceChunk(const GradientMerge& merge, MergeState& state, int place);
  // Member m's dense gradient on place 0, after checking that every place
  // holds one of the same shape and type (the error names the member and place).
  const Tensor& CheckGradientsAlike(const GradientMerge& merge, const MergeState& state,
                                    size_t m) const;

 private:
  void MergeSparse(const GradientMerge& merge, MergeState& state, size_t m);
  void MergeCompressed(const GradientMerge& merge, size_t m, Variable* const* place_vars,
                       int64_t lo, int64_t hi);
  void SumInPlaceOrder(const GradientMerge& merge, Variable* const* place_vars, int64_t lo,
                       int64_t hi) const;
  bool Compresses(const Variable& gradient) const;
  // Place p's residual of member m (sized `elements`, zeros when new or
  // resized; -1: as it is).
  std::vector<float>& Residual(const GradientMerge& merge, size_t m, int place, int64_t elements);

  const int places_;
  const BuildStrategy build_;
  // Error feedback of compressed merges: by merge order, [member * places + place].
  std::vector<std::vector<std::vector<float>>> residuals_;
};

}  // namespace rill
