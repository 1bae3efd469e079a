#include "ops/math/gemm_recorder.h"

#include <atomic>

#include "rill/error.h"

namespace rill {
namespace {

std::atomic<GemmRecorder*>& Installed() {
  static std::atomic<GemmRecorder*> recorder{nullptr};
  return recorder;
}

}  // namespace

GemmRecorder::GemmRecorder() {
  GemmRecorder* none = nullptr;
  RILL_CHECK(Installed().compare_exchange_strong(none, this), kInvalidArgument,
             "a GemmRecorder is already installed");
}

GemmRecorder::~GemmRecorder() { Installed().store(nullptr); }

std::vector<GemmCall> GemmRecorder::calls() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return calls_;
}

void GemmRecorder::Record(const GemmCall& call) {
  GemmRecorder* recorder = Installed().load(std::memory_order_relaxed);
  if (recorder == nullptr) return;
  std::lock_guard<std::mutex> lock(recorder->mutex_);
  recorder->calls_.push_back(call);
}

}  // namespace rill
