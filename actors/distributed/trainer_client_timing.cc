// TrainerClient's step timing (trainer_client.h, Counters): where a
// distributed trainer's step goes besides compute. The send and recv ops
// report here; a mutex guards the pending-recv interval, which few ops a step
// touch, so it is never contended for long.
#include <algorithm>
#include <mutex>

#include "rill/trainer_client.h"

namespace rill {

void TrainerClient::CountPush(int64_t began_ns, int64_t ended_ns) {
  push_ns_.fetch_add(std::max<int64_t>(0, ended_ns - began_ns), std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(timing_mutex_);
  last_push_end_ns_ = std::max(last_push_end_ns_, ended_ns);
}

void TrainerClient::CountRecvIssued(int64_t now_ns) {
  std::lock_guard<std::mutex> lock(timing_mutex_);
  if (pending_recvs_++ == 0) recvs_pending_since_ns_ = now_ns;
}

void TrainerClient::CountRecvDone(int64_t now_ns) {
  std::lock_guard<std::mutex> lock(timing_mutex_);
  if (pending_recvs_ == 0 || --pending_recvs_ > 0) return;
  const int64_t from = std::max(recvs_pending_since_ns_, last_push_end_ns_);
  param_wait_ns_.fetch_add(std::max<int64_t>(0, now_ns - from), std::memory_order_relaxed);
}

}  // namespace rill
