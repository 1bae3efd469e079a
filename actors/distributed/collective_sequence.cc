#include "actors/distributed/collective_sequence.h"

#include <vector>

#include "rill/error.h"

namespace rill {
namespace {

constexpr const char* kSequenceVar = "@COLLECTIVE_SEQUENCE@";

}  // namespace

CollectiveSequence::CollectiveSequence() : thread_([this] { Loop(); }) {}

CollectiveSequence::~CollectiveSequence() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_all();
  thread_.join();
  for (auto& [order, item] : waiting_) {
    item.done(std::make_exception_ptr(Error(
        ErrorCode::kCancelled,
        StrCat("collective ", order, " of ", count_, " never ran: the process group closed"))));
  }
}

void CollectiveSequence::Submit(int64_t order, int64_t count, Work work, Done done) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    RILL_CHECK(count >= 1 && order >= 0 && order < count, kInvalidArgument, "collective ", order,
               " of ", count, ": its order is out of range");
    RILL_CHECK(count_ == 0 || count_ == count, kInvalidArgument, "collective ", order, " of ",
               count, ": the step has ", count_, " collectives");
    RILL_CHECK(waiting_.count(order) == 0, kInvalidArgument, "collective ", order, " of ", count,
               " was submitted twice in one step");
    count_ = count;
    waiting_.emplace(order, Item{std::move(work), std::move(done)});
  }
  ready_.notify_all();
}

void CollectiveSequence::Loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    ready_.wait(lock, [&] { return stopping_ || waiting_.count(next_) > 0; });
    if (waiting_.count(next_) == 0) return;  // stopping, and nothing is due
    auto node = waiting_.extract(next_);
    next_ = next_ + 1 == count_ ? 0 : next_ + 1;
    lock.unlock();
    std::exception_ptr error;
    try {
      node.mapped().work();
    } catch (...) {
      error = std::current_exception();
    }
    node.mapped().done(error);
    lock.lock();
  }
}

std::string CollectiveSequence::Describe() const { return "the collectives of a process group"; }

void CollectiveSequence::Install(Scope* scope, std::shared_ptr<CollectiveSequence> sequence) {
  scope->Var(kSequenceVar)->set_object(std::move(sequence));
}

std::shared_ptr<CollectiveSequence> CollectiveSequence::Find(const Scope& scope) {
  const Variable* var = scope.FindVar(kSequenceVar);
  auto sequence = var ? std::dynamic_pointer_cast<CollectiveSequence>(var->object()) : nullptr;
  RILL_CHECK(sequence != nullptr, kInvalidArgument,
             "process_allreduce ops need a process group (rill train --collective, or "
             "ProcessGroup::Install)");
  return sequence;
}

}  // namespace rill
