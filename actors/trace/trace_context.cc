#include "actors/trace/trace_context.h"

namespace rill {

TraceContext& CurrentTrace() {
  thread_local TraceContext context;
  return context;
}

int64_t TraceSendTime(const TraceContext& context, int lane) {
  return context.lane == lane && context.kernel_end_ns > 0 ? context.kernel_end_ns - 1
                                                           : TraceRecorder::Now();
}

TraceWait::TraceWait(WaitKind kind, const std::string& what)
    : context_(CurrentTrace()), kind_(kind) {
  if (context_.recorder == nullptr) return;
  what_ = context_.recorder->Intern(what);
  begin_ns_ = TraceRecorder::Now();
}

TraceWait::~TraceWait() {
  if (context_.recorder == nullptr) return;
  TraceEvent event;
  event.kind = TraceEventKind::kWait;
  event.sub = static_cast<uint8_t>(kind_);
  event.begin_ns = begin_ns_;
  event.end_ns = TraceRecorder::Now();
  event.lane = context_.lane;
  event.graph = static_cast<uint16_t>(context_.graph);
  event.iteration = context_.iteration;
  event.detail = what_;
  context_.recorder->Record(event);
}

}  // namespace rill
