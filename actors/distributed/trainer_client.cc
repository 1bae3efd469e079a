#include "rill/trainer_client.h"

#include <algorithm>
#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <future>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "actors/distributed/frame_encoder.h"
#include "actors/distributed/payload_destinations.h"
#include "actors/distributed/transport.h"
#include "actors/distributed/transport_mailbox.h"
#include "actors/distributed/wire.h"
#include "actors/executor/runtime_internals.h"
#include "rill/error.h"
#include "rill/runtime.h"

namespace rill {
namespace {

using Clock = std::chrono::steady_clock;
// To a link actor from itself: send a heartbeat, check the server's.
using beat_atom = caf::atom_constant<caf::atom("beat")>;
// To a link actor: stop (the client is gone).
using close_atom = caf::atom_constant<caf::atom("close")>;
// To a link actor: its connection is set; say HELLO.
using start_atom = caf::atom_constant<caf::atom("start")>;

constexpr const char* kClientVar = "@trainer_client";

}  // namespace

// What a link's actor and the trainer's threads share.
struct TrainerClient::Link {
  std::string endpoint;
  caf::actor actor;
  // This link's own transport, with one connection to the server, set before
  // the actor starts. Send is called from the trainer's threads
  // and the actor alike (Transport::Send is thread-safe). Destroyed with the
  // link, by its last holder: the client or the actor, never the transport's
  // own thread (its callbacks hold only the actor's handle).
  std::unique_ptr<Transport> transport;
  ConnectionId connection = 0;
  // Where VALUEs are read (the transport's thread asks): a parameter's
  // shape, learnt from its first VALUE.
  std::shared_ptr<PayloadDestinations> destinations = std::make_shared<PayloadDestinations>();

  // Sends `message` with `payload`'s bytes beside it (frame_encoder.h).
  void Send(proto::WireMessage message, const Tensor& payload = Tensor()) {
    transport->Send(connection, EncodeMessageFrame(std::move(message), payload));
  }

  std::mutex mutex;
  struct Pending {
    int64_t min_step = 0;
    PullDone done;
  };
  std::unordered_map<std::string, Pending> pending;  // by variable: one pull each at a time
  // Standing pulls (sync servers): the variables the server confirmed it
  // sends after each update, and the newest such value not yet taken.
  std::unordered_set<std::string> standing;
  std::unordered_map<std::string, std::pair<int64_t, Tensor>> arrived;
  std::exception_ptr failure;
  std::promise<std::vector<int64_t>> hello;  // the steps the server can start from
  bool hello_done = false;
  std::promise<int64_t> resumed;  // the step the server started from
  bool resumed_done = false;

  // Fails what waits and everything after; the first reason stays.
  void Fail(ErrorCode code, const std::string& why) {
    std::unordered_map<std::string, Pending> waiting;
    std::exception_ptr error;
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (!failure) failure = std::make_exception_ptr(Error(code, why));
      error = failure;
      waiting.swap(pending);
      if (!hello_done) {
        hello_done = true;
        hello.set_exception(error);
      }
      if (!resumed_done) {
        resumed_done = true;
        resumed.set_exception(error);
      }
    }
    for (auto& [var, pull] : waiting) pull.done(Tensor(), error);
  }

  std::exception_ptr Failure() {
    std::lock_guard<std::mutex> lock(mutex);
    return failure;
  }
};

namespace {

// A checked answer from the server, with the payload that came beside it. False: the link failed
// (the actor is to stop).
bool HandleAnswer(const std::shared_ptr<TrainerClient::Link>& link, const std::string& server,
                  const proto::WireMessage& message, Tensor payload) {
  switch (message.kind()) {
    case proto::WireMessage::HEARTBEAT: return true;
    case proto::WireMessage::HELLO: {
      std::lock_guard<std::mutex> lock(link->mutex);
      if (!link->hello_done) {
        link->hello_done = true;
        link->hello.set_value({message.steps().begin(), message.steps().end()});
      }
      return true;
    }
    case proto::WireMessage::RESUME: {
      std::lock_guard<std::mutex> lock(link->mutex);
      if (!link->resumed_done) {
        link->resumed_done = true;
        link->resumed.set_value(message.step());
      }
      return true;
    }
    case proto::WireMessage::VALUE: {
      Tensor value;
      std::exception_ptr error;
      try {
        value = WireTensor(message, std::move(payload));
        link->destinations->Expect(message.var(), value.dtype(), value.shape());
      } catch (...) {
        error = std::current_exception();
      }
      TrainerClient::PullDone done;
      {
        std::lock_guard<std::mutex> lock(link->mutex);
        if (message.standing()) link->standing.insert(message.var());
        auto it = link->pending.find(message.var());
        if (it == link->pending.end() ||
            (message.standing() && !error && message.step() < it->second.min_step)) {
          // A standing pull's version before anyone asks for it: kept for the
          // next Pull (a newer one replaces it). Otherwise nobody asked: ignored.
          if (message.standing() && !error) {
            link->arrived[message.var()] = {message.step(), std::move(value)};
          }
          return true;
        }
        done = std::move(it->second.done);
        link->pending.erase(it);
      }
      done(std::move(value), error);
      return true;
    }
    case proto::WireMessage::ERROR:
      link->Fail(ErrorCode::kUnavailable, StrCat(server, ": ", message.error()));
      return false;
    default:
      link->Fail(ErrorCode::kInvalidArgument,
                 StrCat(server, " sent an unexpected ", WireKindName(message.kind()), " message"));
      return false;
  }
}

// The actor of one link: heartbeats, and the server's answers. It watches its
// connection (a close: lost) and the server's silence, and starts once told
// its connection.
caf::behavior LinkActor(caf::event_based_actor* self, std::shared_ptr<TrainerClient::Link> link,
                        TrainerClientOptions options) {
  auto last_heard = std::make_shared<Clock::time_point>(Clock::now());
  const std::string server = StrCat("parameter server ", link->endpoint);
  const auto hello = WireHello(options.trainer_id, options.last_step);
  return {
      [self, link, last_heard, hello, options](start_atom) {
        *last_heard = Clock::now();
        link->Send(hello);
        self->delayed_send(self, options.heartbeat, beat_atom::value);
      },
      [self, link, server, last_heard, options](beat_atom) {
        const auto silent =
            std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - *last_heard);
        if (silent > options.peer_timeout) {
          link->Fail(ErrorCode::kTimeout,
                     StrCat(server, " sent nothing for ", silent.count(), " ms (limit ",
                            options.peer_timeout.count(), " ms): presumed dead"));
          self->quit();
          return;
        }
        link->transport->Send(link->connection, EncodeHeartbeatFrame());
        self->delayed_send(self, options.heartbeat, beat_atom::value);
      },
      [self](close_atom) { self->quit(); },
      [](transport_open_atom, ConnectionId, const PeerInfo&) {},
      [self, link, server, last_heard](transport_frame_atom, ConnectionId, ReceivedFrame& frame) {
        *last_heard = Clock::now();
        if (frame.kind == FrameKind::kHeartbeat) return;
        try {
          CheckFramedWire(frame.message, frame.payload, server);
        } catch (const Error& e) {
          link->Fail(ErrorCode::kInvalidArgument, e.what());
          self->quit();
          return;
        }
        if (!HandleAnswer(link, server, frame.message, std::move(frame.payload))) self->quit();
      },
      [self, link, server](transport_close_atom, ConnectionId, const std::string& why) {
        link->Fail(ErrorCode::kUnavailable,
                   StrCat("lost the connection to ", server, " (", why, ")"));
        self->quit();
      },
  };
}

}  // namespace

TrainerClient::TrainerClient(std::shared_ptr<Runtime> runtime, TrainerClientOptions options)
    : runtime_(std::move(runtime)), options_(std::move(options)) {
  RILL_CHECK(runtime_ != nullptr, kInvalidArgument, "a trainer client needs a Runtime");
  RILL_CHECK(!options_.pservers.empty(), kInvalidArgument, "a trainer needs parameter servers");
  try {
    ConnectAll();
  } catch (...) {
    // No destructor runs for a constructor that throws: stop the link actors
    // here, or the runtime's actor system would wait for them forever.
    CloseLinks();
    throw;
  }
}

void TrainerClient::ConnectAll() {
  caf::actor_system& system = ActorSystemOf(*runtime_);
  const auto deadline = Clock::now() + options_.connect_timeout;
  for (const std::string& endpoint : options_.pservers) {
    auto link = std::make_shared<Link>();
    link->endpoint = endpoint;
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    const auto wait = std::max(left, std::chrono::milliseconds(1));
    link->actor = system.spawn(LinkActor, link, options_);
    links_.push_back(link);  // from here CloseLinks stops the actor
    link->transport = std::make_unique<Transport>(
        TransportOptions{options_.token, options_.limits},
        CallbacksToActor(link->actor, [known = link->destinations](ConnectionId id,
                                                                   const proto::WireMessage& m) {
          return known->For(id, m);
        }));
    link->connection = link->transport->Connect(
        ParseEndpoint(endpoint), Hello{PeerRole::kTrainer, options_.trainer_id, {}}, wait);
    caf::anon_send(link->actor, start_atom::value);
  }
  std::vector<std::vector<int64_t>> offered;
  for (auto& link : links_) {
    auto hello = link->hello.get_future();
    if (hello.wait_until(deadline) != std::future_status::ready) {
      link->Fail(ErrorCode::kTimeout,
                 StrCat("parameter server ", link->endpoint, " did not answer HELLO in time"));
    }
    offered.push_back(hello.get());  // throws the link's failure
  }
  start_step_ = CommonStartStep(offered);
  // Loading a checkpoint may take a while: a deadline of its own.
  const auto resume_deadline = Clock::now() + options_.connect_timeout;
  for (auto& link : links_) link->Send(WireResume(options_.trainer_id, start_step_));
  for (auto& link : links_) {
    auto resumed = link->resumed.get_future();
    if (resumed.wait_until(resume_deadline) != std::future_status::ready) {
      link->Fail(ErrorCode::kTimeout,
                 StrCat("parameter server ", link->endpoint, " did not answer RESUME in time"));
    }
    const int64_t step = resumed.get();
    RILL_CHECK(step == start_step_, kUnavailable, "parameter server ", link->endpoint,
               " started from step ", step, ", not ", start_step_);
  }
  step_.store(start_step_);
}

int64_t TrainerClient::CommonStartStep(const std::vector<std::vector<int64_t>>& offered) const {
  // Servers offering no step hold no parameters: they start anywhere.
  std::vector<int64_t> candidates;
  for (const auto& steps : offered) candidates.insert(candidates.end(), steps.begin(), steps.end());
  std::sort(candidates.rbegin(), candidates.rend());
  for (int64_t step : candidates) {
    bool everywhere = true;
    for (const auto& steps : offered) {
      everywhere = everywhere &&
                   (steps.empty() || std::find(steps.begin(), steps.end(), step) != steps.end());
    }
    if (everywhere) return step;
  }
  if (candidates.empty()) return 0;
  std::string listing;
  for (size_t i = 0; i < links_.size(); ++i) {
    std::string steps;
    for (int64_t step : offered[i]) steps += StrCat(steps.empty() ? "step " : ", ", step);
    listing += StrCat(i ? "; " : "", links_[i]->endpoint, " can start from ",
                      steps.empty() ? std::string("any step") : steps);
  }
  Fail(ErrorCode::kUnavailable, "the parameter servers have no step to start from in common (",
       listing, "): are their checkpoints of one job?");
}

void TrainerClient::CloseLinks() {
  for (auto& link : links_) caf::anon_send(link->actor, close_atom::value);
}

TrainerClient::~TrainerClient() { CloseLinks(); }

TrainerClient::Link& TrainerClient::LinkFor(const std::string& endpoint) {
  for (auto& link : links_) {
    if (link->endpoint == endpoint) return *link;
  }
  std::string known;
  for (const auto& link : links_) known += (known.empty() ? "" : ", ") + link->endpoint;
  Fail(ErrorCode::kInvalidArgument, "no parameter server ", endpoint, " among this trainer's (",
       known, ")");
}

TrainerClient::PushedBytes TrainerClient::Push(const std::string& endpoint, const std::string& var,
                                               const Variable& value) {
  Link& link = LinkFor(endpoint);
  if (auto failure = link.Failure()) std::rethrow_exception(failure);
  PushedBytes bytes;
  Tensor payload;
  proto::WireMessage message = PushMessage(var, value, &bytes, &payload);
  message.set_trainer_id(options_.trainer_id);
  link.Send(std::move(message), payload);
  pushed_raw_bytes_.fetch_add(bytes.raw, std::memory_order_relaxed);
  pushed_bytes_.fetch_add(bytes.sent, std::memory_order_relaxed);
  return bytes;
}

TrainerClient::PushedBytes TrainerClient::PushAll(
    const std::string& endpoint,
    const std::vector<std::pair<std::string, const Variable*>>& values) {
  Link& link = LinkFor(endpoint);
  if (auto failure = link.Failure()) std::rethrow_exception(failure);
  PushedBytes total;
  auto add = [&total](const PushedBytes& bytes) {
    total.raw += bytes.raw;
    total.sent += bytes.sent;
  };
  std::vector<size_t> as_is;  // the values that go into the bundle
  for (size_t i = 0; i < values.size(); ++i) {
    const Variable& value = *values[i].second;
    const Tensor& dense = value.tensor();
    if (!value.holds_selected_rows() && dense.initialized() && dense.numel() > 0 &&
        !Compresses(dense, dense.numel())) {
      as_is.push_back(i);
    } else {
      add(Push(endpoint, values[i].first, value));
    }
  }
  if (as_is.size() == 1) add(Push(endpoint, values[as_is[0]].first, *values[as_is[0]].second));
  if (as_is.size() < 2) return total;
  std::vector<BundlePart> bundle;
  int64_t bytes = 0;
  for (size_t i : as_is) {
    // A copy: the caller may overwrite the value once this returns.
    bundle.push_back({values[i].first, values[i].second->tensor().Clone()});
    bytes += static_cast<int64_t>(bundle.back().value.bytes());
  }
  link.transport->Send(link.connection, EncodeBundleFrame(step(), options_.trainer_id, bundle));
  pushed_raw_bytes_.fetch_add(bytes, std::memory_order_relaxed);
  pushed_bytes_.fetch_add(bytes, std::memory_order_relaxed);
  add({bytes, bytes});
  return total;
}

bool TrainerClient::Compresses(const Tensor& values, int64_t elements) const {
  return options_.gradient_compression != GradientCompression::kNone && values.initialized() &&
         values.dtype() == DataType::kFloat32 && elements >= options_.compression_min_elements;
}

proto::WireMessage TrainerClient::PushMessage(const std::string& var, const Variable& value,
                                              PushedBytes* bytes, Tensor* payload) {
  const bool rows = value.holds_selected_rows();
  const Tensor& values = rows ? value.selected_rows().value : value.tensor();
  const int64_t row_bytes =
      rows ? static_cast<int64_t>(value.selected_rows().rows.size() * sizeof(int64_t)) : 0;
  bytes->raw = static_cast<int64_t>(values.bytes()) + row_bytes;
  int64_t elements = values.initialized() ? values.numel() : 0;
  if (rows && values.initialized() && values.rank() >= 1 && values.dim(0) > 0) {
    elements = value.selected_rows().height * (values.numel() / values.dim(0));
  }
  if (!Compresses(values, elements)) {
    bytes->sent = bytes->raw;
    // A copy: the caller may overwrite the value once Push returns, while
    // the frame leaves later from the payload's buffer.
    FramedWire framed;
    if (rows) {
      SelectedRows copy = value.selected_rows();
      copy.value = copy.value.Clone();
      framed = FramedPushRows(var, step(), copy);
    } else {
      framed = FramedPush(var, step(), value.tensor().Clone());
    }
    *payload = std::move(framed.payload);
    return std::move(framed.message);
  }
  std::vector<float>* residual;
  {
    std::lock_guard<std::mutex> lock(residuals_mutex_);
    residual = &residuals_[var];  // a map's elements stay where they are
  }
  const GradientCompression kind = options_.gradient_compression;
  proto::WireMessage message;
  int64_t sent = 0;
  if (rows) {
    SelectedRows merged = value.selected_rows().Merged();  // each row's residual once
    const QuantizedValues q = QuantizeRowsWithFeedback(&merged, residual, kind);
    message = WirePushCompressed(var, step(), merged.value.shape(), q, &merged);
    sent = q.bytes() + static_cast<int64_t>(merged.rows.size() * sizeof(int64_t));
  } else {
    if (residual->size() != static_cast<size_t>(values.numel())) {
      residual->assign(static_cast<size_t>(values.numel()), 0.0f);
    }
    const QuantizedValues q =
        QuantizeWithFeedback(values.data<float>(), residual->data(), values.numel(), kind);
    message = WirePushCompressed(var, step(), values.shape(), q);
    sent = q.bytes();
  }
  bytes->sent = sent;
  return message;
}

TrainerClient::Counters TrainerClient::counters() const {
  return {steps_.load(std::memory_order_relaxed), pushed_raw_bytes_.load(std::memory_order_relaxed),
          pushed_bytes_.load(std::memory_order_relaxed), push_ns_.load(std::memory_order_relaxed),
          param_wait_ns_.load(std::memory_order_relaxed)};
}

void TrainerClient::Pull(const std::string& endpoint, const std::string& var, int64_t min_step,
                         PullDone done, bool standing) {
  Link& link = LinkFor(endpoint);
  std::optional<Tensor> ready;  // a standing pull's version that came before this Pull
  {
    std::lock_guard<std::mutex> lock(link.mutex);
    if (link.failure) {
      auto failure = link.failure;
      done(Tensor(), failure);
      return;
    }
    RILL_CHECK(!link.pending.count(var), kInternal, "a second pull of ", var, " from ", endpoint,
               " while the first is in flight");
    auto arrived = link.arrived.find(var);
    if (arrived != link.arrived.end() && arrived->second.first >= min_step) {
      ready = std::move(arrived->second.second);
      link.arrived.erase(arrived);
    } else {
      link.pending[var] = {min_step, std::move(done)};
      // The server already sends each version of it: nothing to ask.
      if (standing && link.standing.count(var)) return;
    }
  }
  if (ready) {
    done(std::move(*ready), nullptr);
    return;
  }
  proto::WireMessage message = WirePull(var);
  message.set_step(min_step);
  message.set_trainer_id(options_.trainer_id);
  message.set_standing(standing);
  link.Send(std::move(message));
}

Tensor TrainerClient::PullNow(const std::string& endpoint, const std::string& var,
                              int64_t min_step) {
  auto result = std::make_shared<std::promise<Tensor>>();
  auto future = result->get_future();
  Pull(endpoint, var, min_step, [result](Tensor value, std::exception_ptr error) {
    if (error) {
      result->set_exception(error);
    } else {
      result->set_value(std::move(value));
    }
  });
  return future.get();  // the link fails it when the server dies or goes silent
}

void TrainerClient::Finish() {
  for (auto& link : links_) {
    if (link->Failure()) continue;
    link->Send(WireBye(options_.trainer_id));
  }
}

std::exception_ptr TrainerClient::failure() const {
  for (auto& link : links_) {
    if (auto failure = link->Failure()) return failure;
  }
  return nullptr;
}

std::string TrainerClient::Describe() const {
  std::string servers;
  for (const auto& link : links_) servers += (servers.empty() ? "" : ", ") + link->endpoint;
  return StrCat("trainer ", options_.trainer_id, " of parameter servers ", servers);
}

void TrainerClient::Install(Scope* scope, std::shared_ptr<TrainerClient> client) {
  scope->Var(kClientVar)->set_object(std::move(client));
}

std::shared_ptr<TrainerClient> TrainerClient::Find(const Scope& scope) {
  const Variable* var = scope.FindVar(kClientVar);
  auto client = var ? std::dynamic_pointer_cast<TrainerClient>(var->object()) : nullptr;
  RILL_CHECK(client != nullptr, kInvalidArgument,
             "send and recv ops need a trainer client (run the program as a trainer: rill train "
             "--role trainer, or TrainerClient::Install)");
  return client;
}

}  // namespace rill
