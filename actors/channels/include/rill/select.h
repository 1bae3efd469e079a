// Select: waits on several channel operations and performs exactly one —
// the first that can go through — like Go's select.
//
//   Select select;
//   const int got = select.Recv(results, &value);
//   const int sent = select.Send(work, std::move(job));
//   select.Default();                       // optional: never wait
//   SelectResult r = select.Wait();         // or WaitFor(timeout)
//   if (r.index == got && r.status == ChannelStatus::kOk) use(value);
//
// Ready cases are tried in a random order on every call, so no case is
// starved. A receive case on a closed, drained channel fires with kClosed; a
// send case on a closed channel fires with kClosed (its value is dropped).
// The default case fires, with kWouldBlock, when nothing is ready. A Select
// is used once; the channels must outlive the call.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <utility>
#include <vector>

#include "rill/channel.h"
#include "rill/error.h"

namespace rill {

struct SelectResult {
  int index = -1;  // the case that fired; -1 after a timeout
  ChannelStatus status = ChannelStatus::kTimeout;
};

class Select {
 public:
  // Each returns the case's index, in the order the cases were added.
  template <class T>
  int Recv(Channel<T>& channel, T* out) {
    Case c;
    c.channel = &channel;
    c.try_locked = [&channel, out](ChannelStatus* status, ChannelBase::PendingWakes* wakes) {
      return channel.TryRecvLocked(out, status, wakes);
    };
    c.park_locked = [&channel, out](const std::shared_ptr<ChannelWaiter>& waiter, int which) {
      channel.receivers_.push_back({waiter, which, out});
    };
    cases_.push_back(std::move(c));
    return static_cast<int>(cases_.size()) - 1;
  }

  template <class T>
  int Send(Channel<T>& channel, T value) {
    auto held = std::make_shared<T>(std::move(value));
    Case c;
    c.channel = &channel;
    c.try_locked = [&channel, held](ChannelStatus* status, ChannelBase::PendingWakes* wakes) {
      return channel.TrySendLocked(*held, status, wakes);
    };
    c.park_locked = [&channel, held](const std::shared_ptr<ChannelWaiter>& waiter, int which) {
      channel.senders_.push_back({waiter, which, held.get()});
    };
    cases_.push_back(std::move(c));
    return static_cast<int>(cases_.size()) - 1;
  }

  int Default() {
    RILL_CHECK(default_ < 0, kInvalidArgument, "a select has at most one default case");
    cases_.push_back(Case{});
    default_ = static_cast<int>(cases_.size()) - 1;
    return default_;
  }

  SelectResult Wait() { return Run(std::nullopt); }
  template <class Rep, class Period>
  SelectResult WaitFor(std::chrono::duration<Rep, Period> timeout) {
    return Run(std::chrono::steady_clock::now() + timeout);
  }

 private:
  struct Case {
    ChannelBase* channel = nullptr;  // null for the default case
    // With the channel locked: performs the operation if the channel is ready.
    std::function<bool(ChannelStatus*, ChannelBase::PendingWakes*)> try_locked;
    // With the channel locked: parks `waiter` for this case.
    std::function<void(const std::shared_ptr<ChannelWaiter>&, int)> park_locked;
  };

  static std::minstd_rand& Random() {
    thread_local std::minstd_rand random(std::random_device{}());
    return random;
  }

  SelectResult Run(const std::optional<SteadyTime>& deadline) {
    std::vector<ChannelBase*> channels;
    std::vector<int> order;
    for (int i = 0; i < static_cast<int>(cases_.size()); ++i) {
      if (cases_[i].channel == nullptr) continue;
      channels.push_back(cases_[i].channel);
      order.push_back(i);
    }
    RILL_CHECK(!order.empty() || default_ >= 0, kInvalidArgument,
               "a select needs at least one case (it would wait forever)");
    // Locks in address order, so that selects over the same channels cannot deadlock.
    std::sort(channels.begin(), channels.end());
    channels.erase(std::unique(channels.begin(), channels.end()), channels.end());
    std::shuffle(order.begin(), order.end(), Random());

    ChannelBase::PendingWakes wakes;
    std::shared_ptr<ChannelWaiter> waiter;
    SelectResult result;
    for (ChannelBase* c : channels) c->mutex_.lock();
    for (int i : order) {
      if (cases_[i].try_locked(&result.status, &wakes)) {
        result.index = i;
        break;
      }
    }
    if (result.index < 0 && default_ < 0) {
      waiter = std::make_shared<ChannelWaiter>();
      for (int i : order) cases_[i].park_locked(waiter, i);
    }
    for (auto it = channels.rbegin(); it != channels.rend(); ++it) (*it)->mutex_.unlock();
    ChannelBase::RunWakes(wakes);
    if (result.index >= 0) return result;
    if (waiter == nullptr) return {default_, ChannelStatus::kWouldBlock};

    if (!waiter->Wait(deadline)) {
      if (waiter->Claim()) {
        for (ChannelBase* c : channels) c->RemoveWaiter(waiter.get());
        return {-1, ChannelStatus::kTimeout};
      }
      waiter->Wait(std::nullopt);
    }
    // The case that fired took its entry; the others are still parked.
    for (ChannelBase* c : channels) c->RemoveWaiter(waiter.get());
    return {waiter->which(), waiter->status()};
  }

  std::vector<Case> cases_;
  int default_ = -1;
};

}  // namespace rill
