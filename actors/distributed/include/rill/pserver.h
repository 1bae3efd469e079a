// ParameterServer: runs a server program written by the distribute
// transpiler (one `listen_and_serv` op; actors/distributed/distributed.md). It listens
// on its endpoint with Rill's transport (a connection proves the job's token
// in a handshake before anything else is read); trainers say HELLO, push
// gradients and pull parameters. Sync mode: an optimize block runs once its gradient came from
// every trainer for the step (the mean of them); async: on each arrival.
//
//   ParameterServer server(main, startup, options, runtime);
//   server.Serve();   // until every trainer said BYE; throws on a dead trainer
//
// Faults end the serve with an error naming the peer: a trainer whose
// connection drops or that stays silent past `peer_timeout` (the other
// trainers get an ERROR saying so), or trainers that never come within
// `connect_timeout`. A malformed, oversized or unknown message, or one from a
// peer that did not say HELLO, is answered with an ERROR, logged, and
// otherwise ignored.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "rill/proto/program.pb.h"
#include "rill/wire_limits.h"

namespace rill {

class Runtime;

struct ParameterServerOptions {
  // The port to listen on (HOST:PORT; port 0 picks a free one). The host
  // names the server in messages; `bind` is the address it listens on.
  std::string endpoint = "127.0.0.1:0";
  std::string bind = "127.0.0.1";
  // The job's token: each connection proves it in the transport's handshake
  // (it never crosses the wire). An empty token works and proves nothing.
  std::string token;
  // Every `checkpoint_every` completed steps the server saves its variables
  // and its step to `checkpoint_path` (0: never), keeping the one before at
  // `checkpoint_path`.prev. A restarted job goes on from the newest step that
  // every server has (the trainers agree on it: distributed.md, "Checkpoints").
  std::string checkpoint_path;
  int64_t checkpoint_every = 0;
  std::chrono::milliseconds heartbeat{500};
  std::chrono::milliseconds peer_timeout{5000};
  // How long all trainers have to say HELLO.
  std::chrono::milliseconds connect_timeout{60000};
  WireLimits limits;
  // Where rejected messages and events are logged (default: the log sink,
  // rill/log.h, as "<server name>: <line>").
  std::function<void(const std::string&)> log;
};

class ParameterServer {
 public:
  // Runs the startup program, checks its checkpoints (loading the newest) and
  // starts listening. Throws naming the endpoint when the port cannot be
  // bound, naming the op when `main` is not a server program, and naming the
  // file and the failed check when the checkpoint path is not writable or a
  // checkpoint is damaged or does not match the program.
  ParameterServer(const proto::ProgramDesc& main, const proto::ProgramDesc& startup,
                  ParameterServerOptions options, std::shared_ptr<Runtime> runtime);
  ~ParameterServer();
  ParameterServer(const ParameterServer&) = delete;
  ParameterServer& operator=(const ParameterServer&) = delete;

  // The port it listens on.
  uint16_t port() const;
  // Serves until every trainer said BYE. Throws rill::Error naming the
  // trainer when one dies or goes silent, or when they do not all come.
  void Serve();
  // Completed steps (every optimize block applied), the step started from included.
  int64_t step() const;
  // The steps it could start from at start-up, newest first: its checkpoints,
  // and 0 (the startup values) while it has fewer than two; empty when it holds
  // no parameters (it starts wherever the trainers say).
  const std::vector<int64_t>& start_steps() const;

  struct State;

 private:
  std::shared_ptr<Runtime> runtime_;
  std::shared_ptr<State> state_;
};

}  // namespace rill
