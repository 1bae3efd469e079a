// SyncAllreduce: the dense sums of a process group (process_allreduce's
// gradients), run by Gloo's halving-doubling allreduce over pairs in Gloo's
// sync mode.
//
// Why not gloo::allreduce (the ring over unbound buffers) as for the other
// collectives: every segment of that ring is a rendezvous (the receiver
// announces its buffer, the sender's event-loop thread answers with the data,
// the receiver's event-loop thread reads it and wakes the caller), so one
// allreduce is a chain of a dozen thread wakes across the processes. Where
// the ranks' cores are busy with the training itself (two ranks on two cores)
// each wake waits for a core: measured here, 235k floats between two
// processes that compute 6-7 ms between allreduces took a median 2.7-3.2 ms
// (p90 6 ms) that way, and 0.7-0.9 ms (p90 1.4 ms) in sync mode, where the
// thread that runs the collective writes and reads its sockets itself.
//
// Sync mode writes with blocking calls and a rank writes before it reads, so
// one message must fit in the sockets' buffers or two ranks writing to each
// other would wait for each other: the values go through in pieces of at
// most kPieceBytes (a message of halving-doubling is at most a piece), each
// through a staging buffer that the algorithm was built on (Gloo's
// algorithms are built once on fixed buffers: building one exchanges nothing
// but takes slots, which must match on every rank).
//
// The sum of each value is computed on one rank and sent to the others, so
// every rank gets the same bits; the pairing of ranks is fixed, so a run
// gives the same bits as the last.
//
// Thread-safety: one Run at a time (ProcessGroup serializes its collectives).
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

namespace gloo {
class Context;
}

namespace rill {

template <typename T>
class SyncAllreduce {
 public:
  // Messages of the halving-doubling allreduce are at most a piece: 256 KiB
  // fits any Linux default socket buffer pair (128 KiB receive + 416 KiB send
  // on loopback with Debian's defaults).
  static constexpr size_t kPieceBytes = 256 << 10;

  // `context`'s pairs must be in sync mode, and every rank must build its
  // SyncAllreduces in the same order (they take the context's slots).
  explicit SyncAllreduce(const std::shared_ptr<gloo::Context>& context);
  ~SyncAllreduce();

  // The values of `parts`, one after the other, = their sum over the ranks
  // times `scale` (the stages gather and scatter them: no packed copy).
  // Throws what Gloo throws (gloo::IoException on a lost peer or a timeout).
  void Run(std::span<const std::span<T>> parts, T scale);

 private:
  class Stage;
  // Stages of decreasing size: a remainder smaller than a piece goes through
  // the smallest one that holds it, not a whole piece of zeros.
  std::vector<std::unique_ptr<Stage>> stages_;
};

extern template class SyncAllreduce<float>;
extern template class SyncAllreduce<double>;

}  // namespace rill
