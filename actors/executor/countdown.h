// Countdown: the hot path of a readiness message inside one process. Each op
// keeps one per iteration slot, set to the number of ops it waits for; every
// producer that finishes arrives once, and the arrival that brings it to zero
// makes the op runnable. The count is tagged with the generation (iteration)
// it counts for, in one 64-bit word, so an arrival meant for an earlier
// iteration (a late straggler after a timeout) is recognised and dropped
// instead of being counted for the next one.
#pragma once

#include <atomic>
#include <cstdint>

namespace rill {

class Countdown {
 public:
  enum class Arrival {
    kWaiting,  // counted; more arrivals are needed
    kReady,    // this arrival brought the count to zero
    kStale,    // for another generation, or after zero: ignored
  };

  // Starts counting `count` arrivals for `generation`. The caller publishes
  // this before any arrival of that generation can happen.
  void Reset(uint32_t generation, uint32_t count) {
    state_.store(Pack(generation, count), std::memory_order_relaxed);
  }

  // One arrival for `generation`. Acquire-release: the arrival that returns
  // kReady sees everything the other arrivals' threads wrote before arriving.
  Arrival Arrive(uint32_t generation) {
    uint64_t current = state_.load(std::memory_order_relaxed);
    while (true) {
      if (Generation(current) != generation || Count(current) == 0) return Arrival::kStale;
      const uint64_t next = current - 1;
      if (state_.compare_exchange_weak(current, next, std::memory_order_acq_rel,
                                       std::memory_order_relaxed)) {
        return Count(next) == 0 ? Arrival::kReady : Arrival::kWaiting;
      }
    }
  }

  uint32_t generation() const { return Generation(state_.load(std::memory_order_acquire)); }
  uint32_t remaining() const { return Count(state_.load(std::memory_order_acquire)); }

 private:
  static uint64_t Pack(uint32_t generation, uint32_t count) {
    return (static_cast<uint64_t>(generation) << 32) | count;
  }
  static uint32_t Generation(uint64_t s) { return static_cast<uint32_t>(s >> 32); }
  static uint32_t Count(uint64_t s) { return static_cast<uint32_t>(s); }

  std::atomic<uint64_t> state_{0};
};

}  // namespace rill
