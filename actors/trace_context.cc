#include "actors/trace_context.h"

namespace rill {

TraceContext& CurrentTrace() {
  thread_local TraceContext context;
  return context;
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
