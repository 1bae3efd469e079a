#include "rill/pserver.h"

#include <algorithm>
#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <future>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "actors/distributed/frame_encoder.h"
#include "actors/distributed/payload_destinations.h"
#include "actors/distributed/pserver_checkpoint.h"
#include "actors/distributed/transport.h"
#include "actors/distributed/transport_mailbox.h"
#include "actors/distributed/wire.h"
#include "actors/executor/runtime_internals.h"
#include "rill/error.h"
#include "rill/executor.h"
#include "rill/log.h"
#include "rill/op_desc.h"
#include "rill/program_io.h"
#include "rill/runtime.h"
#include "rill/scope.h"
#include "rill/selected_rows.h"

namespace rill {
namespace {

using Clock = std::chrono::steady_clock;
using beat_atom = caf::atom_constant<caf::atom("beat")>;

// What listen_and_serv says (distributed.md).
struct ServeConfig {
  int trainers = 1;
  bool sync = true;
  int server_index = 0;
  std::vector<int> blocks;
  std::vector<std::string> grads, params;
  int prepare_block = -1;
};

const proto::Attr& RequireAttr(const proto::OpDesc& op, const std::string& name) {
  const proto::Attr* attr = FindAttr(op, name);
  RILL_CHECK(attr != nullptr, kInvalidArgument, "listen_and_serv: no attribute \"", name, "\"");
  return *attr;
}

ServeConfig ReadServeConfig(const proto::ProgramDesc& main) {
  RILL_CHECK(main.blocks_size() > 0, kInvalidArgument, "the server program has no blocks");
  const proto::OpDesc* serve = nullptr;
  for (const auto& op : main.blocks(0).ops()) {
    if (op.type() == "listen_and_serv") serve = &op;
  }
  RILL_CHECK(serve != nullptr, kInvalidArgument,
             "not a parameter-server program: block 0 has no listen_and_serv op (write one with "
             "rill transpile)");
  ServeConfig config;
  config.trainers = static_cast<int>(RequireAttr(*serve, "trainers").i());
  config.sync = RequireAttr(*serve, "sync_mode").b();
  config.server_index = static_cast<int>(RequireAttr(*serve, "server_index").i());
  for (int b : RequireAttr(*serve, "optimize_blocks").blocks().values()) config.blocks.push_back(b);
  for (const auto& g : RequireAttr(*serve, "grads").strings().values()) config.grads.push_back(g);
  for (const auto& p : RequireAttr(*serve, "params").strings().values()) config.params.push_back(p);
  if (const proto::Attr* prepare = FindAttr(*serve, "prepare_block")) {
    config.prepare_block = prepare->block();
  }
  RILL_CHECK(config.trainers >= 1, kInvalidArgument, "listen_and_serv: trainers must be >= 1");
  RILL_CHECK(
      config.blocks.size() == config.grads.size() && config.blocks.size() == config.params.size(),
      kInvalidArgument, "listen_and_serv: ", config.blocks.size(), " optimize blocks, ",
      config.grads.size(), " grads and ", config.params.size(), " params: must be equal");
  return config;
}

// The mean of the trainers' gradients, summed in trainer order (the same
// numbers whichever arrived first).
void MeanInto(const std::map<int, Variable>& parts, int trainers, Variable* out) {
  const Variable& first = parts.begin()->second;
  if (first.holds_selected_rows()) {
    std::vector<const SelectedRows*> rows;
    for (const auto& [id, part] : parts) rows.push_back(&part.selected_rows());
    SelectedRows merged = MergeSelectedRows(rows);
    Tensor& values = merged.value;
    RILL_CHECK(values.dtype() == DataType::kFloat32, kInvalidArgument,
               "gradients must be float32, got ", values.Describe());
    float* v = values.mutable_data<float>();
    for (int64_t i = 0; i < values.numel(); ++i) v[i] /= static_cast<float>(trainers);
    *out->mutable_selected_rows() = std::move(merged);
    return;
  }
  const Tensor& t0 = first.tensor();
  RILL_CHECK(t0.dtype() == DataType::kFloat32, kInvalidArgument, "gradients must be float32, got ",
             t0.Describe());
  for (const auto& [id, part] : parts) {
    RILL_CHECK(!part.holds_selected_rows() && part.tensor().shape() == t0.shape(), kInvalidArgument,
               "trainer ", id, " sent a gradient of another shape or kind (",
               part.tensor().Describe(), ", expected ", t0.Describe(), ")");
  }
  // Summed into the first trainer's gradient when it is a received buffer no
  // one else holds, else (a part of a bundle) into a new one, in the same order.
  Tensor mean = t0.shares_buffer() ? Tensor(t0.dtype(), t0.shape()) : t0;
  float* m = mean.mutable_data<float>();
  const float* sum = t0.data<float>();  // the sum so far
  for (auto it = std::next(parts.begin()); it != parts.end(); ++it) {
    const float* p = it->second.tensor().data<float>();
    for (int64_t i = 0; i < mean.numel(); ++i) m[i] = sum[i] + p[i];
    sum = m;
  }
  if (sum != m) std::copy(sum, sum + mean.numel(), m);
  for (int64_t i = 0; i < mean.numel(); ++i) m[i] /= static_cast<float>(trainers);
  *out->mutable_tensor() = std::move(mean);
}

}  // namespace

struct ParameterServer::State {
  // Where a trainer's messages come from and the answers go: its connection
  // on `transport`.
  struct Link {
    ConnectionId connection = 0;
  };

  ParameterServerOptions options;
  proto::ProgramDesc main, startup;
  ServeConfig config;
  std::string name;  // "parameter server 0 (127.0.0.1:6000)"
  Scope scope;
  Executor executor;
  std::unique_ptr<PreparedBlock> prepare;
  int64_t prepared_step = 0;

  struct Pull {
    Link link;
    int trainer;
    int64_t step;
  };
  struct Served {
    std::string grad, param;
    // The parameter's: what each pushed gradient must be (dense, or as the
    // dense tensor its selected rows stand for).
    DataType dtype = DataType::kFloat32;
    Shape shape;
    std::unique_ptr<PreparedBlock> block;
    int64_t version = 0;
    std::map<int, Variable> parts;  // this round's gradients, by trainer
    std::vector<Pull> waiting;
    // Trainers with a standing pull (sync mode): each version goes to them
    // once applied, without a PULL.
    std::vector<Pull> standing;
  };
  std::vector<Served> served;
  std::unordered_map<std::string, size_t> by_grad, by_param;

  struct Trainer {
    Link link;
    Clock::time_point last_heard;
    bool bye = false;
  };
  std::map<int, Trainer> trainers;
  // Where pushed gradients are read (the transport's thread asks): each
  // gradient's own shape, known from the program, on the connections of
  // trainers that said HELLO.
  std::shared_ptr<PayloadDestinations> destinations =
      std::make_shared<PayloadDestinations>(/*admitted_only=*/true);
  // The trainers' connections (after their HELLO), and who proved what in
  // each open connection's handshake.
  std::unique_ptr<Transport> transport;
  std::map<ConnectionId, int> trainer_by_connection;
  std::map<ConnectionId, PeerInfo> connections;
  Clock::time_point started;
  bool failed = false;  // the serve failed: later messages are dropped

  // Null without a checkpoint path. Until a trainer's RESUME says which step
  // the job goes on from, nothing is pushed or pulled (distributed.md).
  std::unique_ptr<PserverCheckpoints> checkpoints;
  bool resumed = false;
  int resumed_by = -1;  // the trainer whose RESUME chose the step
  int64_t resumed_step = 0;
  // What the server could start from at start-up (the public start_steps()).
  std::vector<int64_t> start_steps;

  std::mutex mutex;
  std::promise<void> finished;
  bool finished_set = false;
  std::atomic<int64_t> completed{0};
  caf::actor actor;
  uint16_t port = 0;

  void Log(const std::string& line, LogLevel level = LogLevel::kInfo) {
    if (options.log) {
      options.log(line);
    } else {
      rill::Log(level, name, ": ", line);
    }
  }

  void Finish(std::exception_ptr error) {
    std::lock_guard<std::mutex> lock(mutex);
    if (finished_set) return;
    finished_set = true;
    if (error) {
      finished.set_exception(error);
    } else {
      finished.set_value();
    }
  }

  int64_t CompletedSteps() const {
    int64_t steps = served.empty() ? prepared_step : served.front().version;
    for (const Served& s : served) steps = std::min(steps, s.version);
    return steps;
  }
};

namespace {

using State = ParameterServer::State;

void Reply(State& s, const State::Link& to, const proto::WireMessage& message) {
  if (s.transport && to.connection != 0) {
    s.transport->Send(to.connection, EncodeMessageFrame(message, Tensor()));
  }
}

// The serve fails (a trainer is gone, an update or a checkpoint failed): tell
// the trainers, end the serve with the reason. Only the first failure counts:
// what follows from it (the trainers leaving) is not logged as another.
void FailServe(State& s, ErrorCode code, const std::string& why) {
  if (s.failed) return;
  s.failed = true;
  s.Log(why, LogLevel::kError);
  for (auto& [id, trainer] : s.trainers) {
    if (!trainer.bye) Reply(s, trainer.link, WireError(StrCat(s.name, ": ", why)));
  }
  s.Finish(std::make_exception_ptr(Error(code, StrCat(s.name, ": ", why))));
}

// A VALUE frame of the parameter as it is now. Its payload shares the
// parameter's buffer (no copy): Apply gives the parameter a buffer of its own
// before an update while frames still hold the old one.
void SendValue(State& s, const State::Served& block, const State::Link& to, bool standing) {
  FramedWire framed =
      FramedValue(block.param, block.version, s.scope.FindVar(block.param)->tensor());
  framed.message.set_standing(standing);
  s.transport->Send(to.connection, EncodeMessageFrame(framed.message, framed.payload));
}

void AnswerPulls(State& s, State::Served& block) {
  std::vector<State::Pull> still;
  for (State::Pull& pull : block.waiting) {
    if (s.config.sync && block.version < pull.step) {
      still.push_back(pull);
      continue;
    }
    SendValue(s, block, pull.link, /*standing=*/false);
  }
  block.waiting.swap(still);
}

// Sync mode, after an update: the new version to every standing pull of a
// trainer still training.
void SendStanding(State& s, const State::Served& block) {
  for (const State::Pull& pull : block.standing) {
    if (s.trainers[pull.trainer].bye) continue;
    SendValue(s, block, pull.link, /*standing=*/true);
  }
}

// A PULL that stands (sync mode): the value now when the server is at its
// step, and each later version after its update. One per trainer and variable.
void AddStandingPull(State& s, State::Served& block, const State::Pull& pull) {
  for (const State::Pull& known : block.standing) {
    RILL_CHECK(known.trainer != pull.trainer, kInvalidArgument, "trainer ", pull.trainer,
               " asked for a second standing pull of \"", block.param, "\"");
  }
  block.standing.push_back(pull);
  if (block.version >= pull.step) SendValue(s, block, pull.link, /*standing=*/true);
}

// Runs the block's update with the gradient now in the scope, then saves a
// checkpoint when one is due (before the pulls of the step are answered: see
// distributed.md, "Checkpoints"). A failure here is the server's (an optimizer
// op, the checkpoint's disk), not the sender's: it ends the serve with its
// cause.
void Apply(State& s, State::Served& block, int64_t step) {
  try {
    if (s.prepare && step > s.prepared_step) {
      s.executor.Run(*s.prepare);
      s.prepared_step = step;
    }
    // VALUE frames hold the parameter's buffer until the transport has
    // written them (and ran their `written`): while one does, the update gets
    // a copy of its own (in sync mode they are gone by now). shares_buffer()
    // is ordered after the transport thread's release of the buffer, so its
    // reads end before the update's writes begin.
    Tensor& param = *s.scope.FindVar(block.param)->mutable_tensor();
    if (param.shares_buffer()) param = param.Clone();
    s.executor.Run(*block.block);
    ++block.version;
    const int64_t before = s.completed.load();
    const int64_t now = s.CompletedSteps();
    s.completed.store(now);
    if (now > before && s.checkpoints && s.options.checkpoint_every > 0 &&
        now % s.options.checkpoint_every == 0) {
      try {
        s.checkpoints->Save(s.scope, now);
      } catch (const Error& e) {
        throw Error(e.code(),
                    StrCat("cannot save the checkpoint of step ", now, ": ", e.message()));
      }
    }
  } catch (const Error& e) {
    FailServe(s, e.code(), e.message());
    return;
  } catch (const std::exception& e) {
    FailServe(s, ErrorCode::kInternal, e.what());
    return;
  }
  AnswerPulls(s, block);
  if (s.config.sync) SendStanding(s, block);
}

// The block that receives `trainer`'s gradient `var` of `step`, after the
// checks of what the sender may get wrong: a variable this server receives,
// after the RESUME, the step the block waits for and once per trainer (sync),
// and the parameter's dtype and shape (dense, or the dense shape of selected
// rows). Nothing is kept or changed before they all pass.
State::Served& Receiving(State& s, int trainer, const std::string& var, int64_t step,
                         const Variable& part) {
  auto it = s.by_grad.find(var);
  RILL_CHECK(it != s.by_grad.end(), kNotFound, "trainer ", trainer, " pushed \"", var,
             "\", which this server does not receive");
  RILL_CHECK(s.resumed, kInvalidArgument, "trainer ", trainer, " pushed \"", var,
             "\" before a RESUME said which step the job starts from");
  State::Served& block = s.served[it->second];
  const Tensor& value = part.holds_selected_rows() ? part.selected_rows().value : part.tensor();
  const Shape shape =
      part.holds_selected_rows() ? part.selected_rows().DenseShape() : value.shape();
  RILL_CHECK(value.dtype() == block.dtype && shape == block.shape, kInvalidArgument, "trainer ",
             trainer, " pushed \"", var, "\" as ", DataTypeName(value.dtype()), " ",
             ShapeToString(shape), part.holds_selected_rows() ? " (selected rows)" : "",
             "; its parameter \"", block.param, "\" is ", DataTypeName(block.dtype), " ",
             ShapeToString(block.shape));
  if (!s.config.sync) return block;
  RILL_CHECK(step == block.version + 1, kInvalidArgument, "trainer ", trainer, " pushed \"", var,
             "\" for step ", step, "; this server expects step ", block.version + 1);
  RILL_CHECK(!block.parts.count(trainer), kInvalidArgument, "trainer ", trainer, " pushed \"", var,
             "\" twice for step ", step);
  return block;
}

// A checked gradient (Receiving): kept until every trainer's came (sync),
// then their mean applied; applied at once (async).
void TakeGradient(State& s, State::Served& block, int trainer, int64_t step, Variable part) {
  Variable* grad = s.scope.Var(block.grad);
  if (!s.config.sync) {
    *grad = std::move(part);
    Apply(s, block, step);
    return;
  }
  block.parts[trainer] = std::move(part);
  if (static_cast<int>(block.parts.size()) < s.config.trainers) return;
  MeanInto(block.parts, s.config.trainers, grad);
  block.parts.clear();
  Apply(s, block, step);
}

void HandlePush(State& s, int trainer, const proto::WireMessage& message, Tensor payload) {
  Variable part;
  if (message.selected_rows()) {
    *part.mutable_selected_rows() = WireRows(message, std::move(payload));
  } else {
    *part.mutable_tensor() = WireTensor(message, std::move(payload));
  }
  State::Served& block = Receiving(s, trainer, message.var(), message.step(), part);
  TakeGradient(s, block, trainer, message.step(), std::move(part));
}

// A bundle's parts, each as its own PUSH (views into the one payload), all
// checked before the first is taken: a bundle is refused whole.
void HandleBundle(State& s, int trainer, const proto::WireMessage& message, const Tensor& payload) {
  std::vector<BundlePart> bundled = WireBundle(message, payload);
  std::vector<std::pair<State::Served*, Variable>> parts;
  for (BundlePart& b : bundled) {
    Variable part;
    *part.mutable_tensor() = std::move(b.value);
    parts.emplace_back(&Receiving(s, trainer, b.var, message.step(), part), std::move(part));
  }
  for (auto& [block, part] : parts)
    TakeGradient(s, *block, trainer, message.step(), std::move(part));
}

// The steps this server can start from, newest first, as a HELLO reply says
// them: its checkpoints' (and 0, the startup values, while it has fewer than
// two); once started, the step it started from (the job's, for the trainers
// that come later: in sync mode the server cannot be past it before they push,
// in async mode it may be, and they start where the others did); none when it
// holds no parameters (it can start anywhere).
std::vector<int64_t> StartSteps(const State& s) {
  if (s.served.empty()) return {};
  if (s.resumed) return {s.resumed_step};
  return s.checkpoints ? s.checkpoints->steps() : std::vector<int64_t>{0};
}

// HELLO from a trainer: check its id against its handshake, register and watch it.
void HandleHello(State& s, const State::Link& link, const proto::WireMessage& message) {
  const int id = message.trainer_id();
  std::string refusal;
  // A connection's peer proved the token in its handshake (and the token is
  // not sent again); it must say HELLO as the trainer it announced there.
  const auto connection = s.connections.find(link.connection);
  if (connection == s.connections.end() || connection->second.hello.role != PeerRole::kTrainer ||
      static_cast<int>(connection->second.hello.id) != id) {
    refusal =
        StrCat("refused trainer ", id, ": its connection's handshake announced ",
               connection == s.connections.end() ? std::string("nothing")
                                                 : StrCat("id ", connection->second.hello.id));
  } else if (id < 0 || id >= s.config.trainers) {
    refusal =
        StrCat("refused trainer ", id, ": this job has trainers 0 to ", s.config.trainers - 1);
  } else if (s.trainers.count(id)) {
    refusal = StrCat("refused trainer ", id, ": that id is already connected");
  }
  if (!refusal.empty()) {
    s.Log(refusal, LogLevel::kWarning);
    Reply(s, link, WireError(StrCat(s.name, " ", refusal)));
    return;
  }
  s.trainers[id] = {link, Clock::now(), false};
  s.trainer_by_connection[link.connection] = id;
  s.destinations->Admit(link.connection);
  s.Log(StrCat("trainer ", id, " connected"));
  if (!s.resumed && s.checkpoints && message.last_step() > 0) {
    for (int64_t step : s.checkpoints->steps()) {
      if (step <= message.last_step()) continue;
      FailServe(
          s, ErrorCode::kInvalidArgument,
          StrCat("checkpoint ", s.checkpoints->Describe(step), " is at step ", step,
                 ", beyond the last step of this job (", message.last_step(), ", says trainer ", id,
                 "): a checkpoint of another job? Remove it to start over"));
      return;
    }
  }
  Reply(s, link, WireHelloReply(StartSteps(s)));
}

// RESUME from a trainer: the job goes on from `step`, one of every server's
// start steps. The first RESUME puts the values of that step in place; later
// ones (the other trainers) must name the same step.
void HandleResume(State& s, int trainer, const State::Link& link, int64_t step) {
  if (s.resumed) {
    RILL_CHECK(s.served.empty() || step == s.resumed_step, kInvalidArgument, "trainer ", trainer,
               " asks to start from step ", step, ", but trainer ", s.resumed_by,
               " started this server from step ", s.resumed_step);
    Reply(s, link, WireResumed(step));
    return;
  }
  const std::vector<int64_t> steps = StartSteps(s);
  if (!s.served.empty() && std::find(steps.begin(), steps.end(), step) == steps.end()) {
    std::string list;
    for (int64_t k : steps) list += StrCat(list.empty() ? "" : ", ", k);
    Fail(ErrorCode::kInvalidArgument, "trainer ", trainer, " asks to start from step ", step,
         "; this server can start from step ", list);
  }
  if (s.checkpoints && !s.served.empty()) {
    try {
      s.checkpoints->Resume(step, &s.scope);
    } catch (const Error& e) {
      FailServe(s, e.code(), StrCat("cannot start from step ", step, ": ", e.message()));
      return;
    }
  }
  s.prepared_step = step;
  for (State::Served& block : s.served) block.version = step;
  s.completed.store(step);
  s.resumed = true;
  s.resumed_by = trainer;
  s.resumed_step = step;
  const std::string values = s.served.empty() ? std::string("it holds no parameters")
                             : s.checkpoints  ? s.checkpoints->Describe(step)
                                              : std::string("the startup values");
  s.Log(StrCat("starting from step ", step, " (", values, "), as trainer ", trainer, " asks"));
  Reply(s, link, WireResumed(step));
}

// A checked message from `trainer` (-1: not registered yet) over `from`, with
// the payload that came beside it in its frame.
// Throws what the sender did wrong.
void Dispatch(State& s, const State::Link& from, int trainer, const proto::WireMessage& message,
              Tensor payload) {
  if (message.kind() == proto::WireMessage::HELLO) {
    HandleHello(s, from, message);
    return;
  }
  RILL_CHECK(trainer >= 0, kInvalidArgument, "a ", WireKindName(message.kind()),
             " message from a peer that did not say HELLO");
  s.trainers[trainer].last_heard = Clock::now();
  switch (message.kind()) {
    case proto::WireMessage::HEARTBEAT: return;
    case proto::WireMessage::PUSH: HandlePush(s, trainer, message, std::move(payload)); return;
    case proto::WireMessage::PUSH_BUNDLE: HandleBundle(s, trainer, message, payload); return;
    case proto::WireMessage::RESUME: HandleResume(s, trainer, from, message.step()); return;
    case proto::WireMessage::PULL: {
      auto it = s.by_param.find(message.var());
      RILL_CHECK(it != s.by_param.end(), kNotFound, "trainer ", trainer, " pulled \"",
                 message.var(), "\", which this server does not serve");
      RILL_CHECK(s.resumed, kInvalidArgument, "trainer ", trainer, " pulled \"", message.var(),
                 "\" before a RESUME said which step the job starts from");
      State::Served& block = s.served[it->second];
      if (message.standing() && s.config.sync) {
        AddStandingPull(s, block, {from, trainer, message.step()});
        return;
      }
      block.waiting.push_back({from, trainer, message.step()});
      AnswerPulls(s, block);
      return;
    }
    case proto::WireMessage::BYE: {
      s.trainers[trainer].bye = true;
      s.Log(StrCat("trainer ", trainer, " finished"));
      bool all = static_cast<int>(s.trainers.size()) == s.config.trainers;
      for (auto& [id, t] : s.trainers) all = all && t.bye;
      if (all) s.Finish(nullptr);
      return;
    }
    default:
      Fail(ErrorCode::kInvalidArgument, "a ", WireKindName(message.kind()),
           " message is not for a server");
  }
}

// A frame that came over the transport (its header, sizes and payload already
// checked by the decoder).
void HandleFrame(State& s, ConnectionId from, ReceivedFrame& frame) {
  if (s.failed) return;
  auto known = s.trainer_by_connection.find(from);
  const int trainer = known == s.trainer_by_connection.end() ? -1 : known->second;
  if (frame.kind == FrameKind::kHeartbeat) {
    if (trainer >= 0) s.trainers[trainer].last_heard = Clock::now();
    return;
  }
  auto connection = s.connections.find(from);
  const std::string peer = trainer >= 0 ? StrCat("trainer ", trainer)
                                        : StrCat("an unregistered peer",
                                                 connection == s.connections.end()
                                                     ? std::string()
                                                     : StrCat(" at ", connection->second.address));
  try {
    CheckFramedWire(frame.message, frame.payload, peer);
    Dispatch(s, {from}, trainer, frame.message, std::move(frame.payload));
  } catch (const Error& e) {
    s.Log(StrCat("rejected a message from ", peer, ": ", e.what()), LogLevel::kWarning);
    Reply(s, {from}, WireError(StrCat(s.name, " rejected a message: ", e.what())));
  }
}

// A connection closed: a trainer that had not said BYE is lost.
void HandleClose(State& s, ConnectionId id, const std::string& why) {
  s.connections.erase(id);
  s.destinations->Dismiss(id);
  auto it = s.trainer_by_connection.find(id);
  if (it == s.trainer_by_connection.end()) return;
  const int trainer = it->second;
  s.trainer_by_connection.erase(it);
  if (s.trainers[trainer].bye) return;  // finished, then left
  FailServe(s, ErrorCode::kUnavailable,
            StrCat("lost the connection to trainer ", trainer, " (", why, ") before it finished"));
}

// Heartbeats to the trainers; a silent trainer, or one that never came, ends the serve.
void Beat(caf::event_based_actor* self, State& s) {
  const auto now = Clock::now();
  for (auto& [id, trainer] : s.trainers) {
    if (trainer.bye) continue;
    const auto silent =
        std::chrono::duration_cast<std::chrono::milliseconds>(now - trainer.last_heard);
    if (silent > s.options.peer_timeout) {
      FailServe(s, ErrorCode::kTimeout,
                StrCat("trainer ", id, " sent nothing for ", silent.count(), " ms (limit ",
                       s.options.peer_timeout.count(), " ms): presumed dead"));
      return;
    }
    if (s.transport) s.transport->Send(trainer.link.connection, EncodeHeartbeatFrame());
  }
  if (static_cast<int>(s.trainers.size()) < s.config.trainers &&
      now - s.started > s.options.connect_timeout) {
    FailServe(s, ErrorCode::kTimeout,
              StrCat("only ", s.trainers.size(), " of ", s.config.trainers,
                     " trainers connected within ", s.options.connect_timeout.count(), " ms"));
    return;
  }
  self->delayed_send(self, s.options.heartbeat, beat_atom::value);
}

caf::behavior ServerActor(caf::event_based_actor* self, std::shared_ptr<State> state) {
  self->set_default_handler(
      [state](caf::scheduled_actor*, caf::message_view& view) -> caf::result<caf::message> {
        state->Log(StrCat("dropped a message that is not a wire message: ",
                          to_string(view.copy_content_to_message())),
                   LogLevel::kWarning);
        return caf::sec::unexpected_message;
      });
  // The first beat comes from the constructor, once the actor may use the
  // transport (set after the spawn).
  return {
      [self, state](beat_atom) { Beat(self, *state); },
      [state](transport_open_atom, ConnectionId id, const PeerInfo& peer) {
        state->connections[id] = peer;
      },
      [state](transport_frame_atom, ConnectionId from, ReceivedFrame& frame) {
        try {
          HandleFrame(*state, from, frame);
        } catch (const std::exception& e) {
          // An optimize block failed: nothing the trainers can do about it.
          FailServe(*state, ErrorCode::kInternal, e.what());
        }
      },
      [state](transport_close_atom, ConnectionId id, const std::string& why) {
        HandleClose(*state, id, why);
      },
  };
}

}  // namespace

ParameterServer::ParameterServer(const proto::ProgramDesc& main, const proto::ProgramDesc& startup,
                                 ParameterServerOptions options, std::shared_ptr<Runtime> runtime)
    : runtime_(std::move(runtime)), state_(std::make_shared<State>()) {
  RILL_CHECK(runtime_ != nullptr, kInvalidArgument, "a parameter server needs a Runtime");
  State& s = *state_;
  s.options = std::move(options);
  s.main = main;
  s.config = ReadServeConfig(s.main);
  s.name = StrCat("parameter server ", s.config.server_index, " (", s.options.endpoint, ")");
  const Endpoint endpoint = ParseEndpoint(s.options.endpoint);

  if (!s.options.checkpoint_path.empty()) {
    // Found now, not at the first save, many steps into the job.
    try {
      CheckWritable(s.options.checkpoint_path);
    } catch (const Error& e) {
      throw Error(e.code(), StrCat(s.name, ": cannot write checkpoints: ", e.message()));
    }
  }
  s.startup = startup;
  Executor().Run(s.startup, &s.scope);
  if (!s.options.checkpoint_path.empty()) {
    s.checkpoints = std::make_unique<PserverCheckpoints>(s.main, s.startup,
                                                         s.options.checkpoint_path, &s.scope);
  }
  if (s.config.prepare_block >= 0) {
    s.prepare = s.executor.Prepare(s.main, &s.scope, s.config.prepare_block);
  }
  for (size_t i = 0; i < s.config.blocks.size(); ++i) {
    State::Served served;
    served.grad = s.config.grads[i];
    served.param = s.config.params[i];
    served.block = s.executor.Prepare(s.main, &s.scope, s.config.blocks[i]);
    RILL_CHECK(
        s.scope.FindVar(served.param) && s.scope.FindVar(served.param)->tensor().initialized(),
        kInvalidArgument, s.name, ": parameter \"", served.param, "\" has no value after startup");
    const Tensor& param = s.scope.FindVar(served.param)->tensor();
    served.dtype = param.dtype();
    served.shape = param.shape();
    s.destinations->Expect(served.grad, param.dtype(), param.shape());
    s.by_grad[served.grad] = i;
    s.by_param[served.param] = i;
    s.served.push_back(std::move(served));
  }
  s.start_steps = StartSteps(s);
  s.started = Clock::now();
  s.actor = ActorSystemOf(*runtime_).spawn(ServerActor, state_);
  try {
    s.transport = std::make_unique<Transport>(
        TransportOptions{s.options.token, s.options.limits},
        CallbacksToActor(s.actor,
                         [known = s.destinations](ConnectionId id, const proto::WireMessage& m) {
                           return known->For(id, m);
                         }));
    s.port = s.transport->Listen(Endpoint{s.options.bind, endpoint.port});
  } catch (...) {
    // No destructor runs for a constructor that throws: stop the actor here,
    // or the actor system would wait for it forever.
    caf::anon_send_exit(s.actor, caf::exit_reason::user_shutdown);
    throw;
  }
  caf::anon_send(s.actor, beat_atom::value);
}

ParameterServer::~ParameterServer() {
  caf::anon_send_exit(state_->actor, caf::exit_reason::user_shutdown);
}

uint16_t ParameterServer::port() const { return state_->port; }

int64_t ParameterServer::step() const { return state_->completed.load(); }

const std::vector<int64_t>& ParameterServer::start_steps() const { return state_->start_steps; }

void ParameterServer::Serve() {
  auto finished = state_->finished.get_future();
  std::exception_ptr error;
  try {
    finished.get();
  } catch (...) {
    error = std::current_exception();
  }
  // Let the last messages (ERRORs to the trainers, the final VALUEs) leave.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  caf::anon_send_exit(state_->actor, caf::exit_reason::user_shutdown);
  if (error) std::rethrow_exception(error);
}

}  // namespace rill
