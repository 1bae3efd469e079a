// CollectiveSequence: runs a process group's collectives in their global
// order, whatever order the executor makes them ready in. The ops of one step
// are numbered 0..count-1 (their "order" attribute); a collective submitted
// before its turn waits until the one before it has run, so every rank issues
// the same collectives in the same order and no two ranks wait for each other
// in different collectives. The collectives run on the sequence's own thread
// (never on the executor's: they wait on the network), and `done` is called
// there.
//
// Thread-safety: Submit from any thread; the destructor finishes the
// collectives already submitted, fails those still waiting for their turn, and
// joins the thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "rill/scope.h"

namespace rill {

class CollectiveSequence : public VarObject {
 public:
  using Work = std::function<void()>;
  using Done = std::function<void(std::exception_ptr)>;

  CollectiveSequence();
  ~CollectiveSequence() override;

  // Collective `order` of a step of `count`: runs `work` once collectives
  // 0..order-1 of this step have run, then calls `done` with what it threw.
  // Throws kInvalidArgument when `order` is outside [0, count), the count
  // changed mid-step, or `order` was submitted twice in a step.
  void Submit(int64_t order, int64_t count, Work work, Done done);

  std::string Describe() const override;

  // Where the process_allreduce ops find it (installed with the process group).
  static void Install(Scope* scope, std::shared_ptr<CollectiveSequence> sequence);
  static std::shared_ptr<CollectiveSequence> Find(const Scope& scope);

 private:
  struct Item {
    Work work;
    Done done;
  };
  void Loop();

  std::mutex mutex_;
  std::condition_variable ready_;
  bool stopping_ = false;
  int64_t next_ = 0;   // the order that runs next
  int64_t count_ = 0;  // collectives per step (0: no step begun)
  std::map<int64_t, Item> waiting_;
  std::thread thread_;
};

}  // namespace rill
