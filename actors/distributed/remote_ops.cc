// The trainer's side of the wire: `send` and `recv` run as op actors
// (op_actor.h) on the process's TrainerClient. A send pushes its inputs (a
// bucket of gradients) to its server, in one frame where it can, and is done
// once they are encoded; a recv pulls each
// of its outputs for the current step and is done when all have arrived —
// no thread waits meanwhile. Both report their time to the client (Counters:
// time in Push, time waiting for parameters).
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "actors/trace/trace_context.h"
#include "rill/error.h"
#include "rill/kernel_context.h"
#include "rill/op_actor.h"
#include "rill/op_desc.h"
#include "rill/trainer_client.h"

namespace rill {
namespace {

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

class SendActor : public OpActor {
 public:
  void Run(KernelContext& ctx, OpDone done) override {
    auto client = TrainerClient::Find(*ctx.scope());
    const auto endpoint = ctx.Attr<std::string>("endpoint");
    const TraceContext trace = CurrentTrace();  // set while the executor traces this op
    std::vector<std::pair<std::string, const Variable*>> values;
    std::string names;
    for (int i = 0; i < ctx.InputCount("X"); ++i) {
      values.emplace_back(ctx.InputName("X", i), ctx.InputVar("X", i));
      names += (i ? ", " : "") + ctx.InputName("X", i);
    }
    const int64_t began = trace.recorder ? TraceRecorder::Now() : 0;
    const int64_t push_began = NowNs();
    const auto bytes = client->PushAll(endpoint, values);
    client->CountPush(push_began, NowNs());
    if (trace.recorder != nullptr) {
      TraceEvent e;
      e.kind = TraceEventKind::kSend;
      e.begin_ns = began;
      e.end_ns = TraceRecorder::Now();
      e.lane = trace.lane;
      e.graph = static_cast<uint16_t>(trace.graph);
      e.iteration = trace.iteration;
      e.detail = trace.recorder->Intern(names);
      e.bytes = bytes.sent;
      e.raw_bytes = bytes.raw;
      trace.recorder->Record(e);
    }
    done(nullptr);
  }
};

class RecvActor : public OpActor {
 public:
  void Run(KernelContext& ctx, OpDone done) override {
    auto client = TrainerClient::Find(*ctx.scope());
    const auto endpoint = ctx.Attr<std::string>("endpoint");
    const std::vector<std::string> names = OutputVars(ctx.op(), "Out");
    const int count = static_cast<int>(names.size());
    if (count == 0) return done(nullptr);
    // Shared by the answers, which come on the link's thread.
    struct Pending {
      std::atomic<int> left;
      std::mutex mutex;
      std::exception_ptr error;
      OpDone done;
      std::shared_ptr<TrainerClient> client;  // told when the last answer came
    };
    auto pending = std::make_shared<Pending>();
    pending->left = count;
    pending->done = std::move(done);
    pending->client = client;
    client->CountRecvIssued(NowNs());
    for (int i = 0; i < count; ++i) {
      Tensor* out = ctx.Output("Out", i);
      client->Pull(
          endpoint, names[static_cast<size_t>(i)], client->step(),
          [pending, out](Tensor value, std::exception_ptr error) {
            if (error) {
              std::lock_guard<std::mutex> lock(pending->mutex);
              if (!pending->error) pending->error = error;
            } else {
              *out = std::move(value);
            }
            if (pending->left.fetch_sub(1) != 1) return;
            pending->client->CountRecvDone(NowNs());
            std::exception_ptr first;
            {
              std::lock_guard<std::mutex> lock(pending->mutex);
              first = pending->error;
            }
            pending->done(first);
          },
          /*standing=*/true);
    }
  }
};

const bool send_recv_actors_registered = [] {
  RegisterOpActor("send", [] { return std::make_unique<SendActor>(); });
  RegisterOpActor("recv", [] { return std::make_unique<RecvActor>(); });
  return true;
}();

}  // namespace
}  // namespace rill
