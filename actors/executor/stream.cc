#include "actors/executor/stream.h"

#include <caf/send.hpp>

#include "actors/executor/messages.h"
#include "actors/trace/trace_context.h"

namespace rill {

void Stream::Wake() {
  if (!actor_ || wake_pending_.exchange(true, std::memory_order_seq_cst)) return;
  const TraceContext& context = CurrentTrace();
  if (trace_ != nullptr && context.recorder == trace_ && trace_->on()) {
    // Sent by the traced kernel this thread just ran (or the run's driver).
    TraceEvent e;
    e.kind = TraceEventKind::kMessage;
    e.sub = static_cast<uint8_t>(MessageKind::kWake);
    e.id = trace_->NextMessageId();
    e.begin_ns = e.end_ns = TraceSendTime(context, context.lane);
    e.lane = context.lane;
    e.peer = trace_lane_;
    e.iteration = context.iteration;
    e.graph = static_cast<uint16_t>(context.graph);
    wake_id_.store(e.id, std::memory_order_release);
    trace_->Record(e);
  }
  caf::anon_send(actor_, wake_atom::value);
}

}  // namespace rill
