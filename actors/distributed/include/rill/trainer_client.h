// TrainerClient: a trainer's links to its parameter servers (the wire
// protocol of actors/distributed/distributed.md). One link actor per server relays
// pushes and pulls over its own connection on Rill's transport (the token
// proved in a handshake, never sent), answers and sends heartbeats, and
// watches the server: a lost connection, a server silent for longer than
// `peer_timeout` or an ERROR from it fails every pull in flight and every
// later call with an error naming the server. Nothing waits forever.
//
//   auto client = std::make_shared<TrainerClient>(runtime, options);  // HELLO to each
//   TrainerClient::Install(&scope, client);   // the send and recv ops find it there
//   client->set_step(client->start_step() + 1);
//   exe.Run(...);                             // send pushes, recv pulls
//   client->Finish();                         // BYE
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "rill/build_strategy.h"
#include "rill/proto/program.pb.h"
#include "rill/scope.h"
#include "rill/tensor.h"
#include "rill/wire_limits.h"

namespace rill {
namespace proto {
class WireMessage;
}

class Runtime;

struct TrainerClientOptions {
  int trainer_id = 0;
  std::vector<std::string> pservers;  // HOST:PORT, in server index order
  std::string token;                  // proved in each connection's handshake
  // Servers may start after the trainer: connecting is retried this long.
  std::chrono::milliseconds connect_timeout{30000};
  std::chrono::milliseconds heartbeat{500};
  // A server heard from less recently than this is declared dead.
  std::chrono::milliseconds peer_timeout{5000};
  WireLimits limits;
  // Gradients pushed with at least compression_min_elements elements
  // (selected rows: height times width) are quantized, with error feedback
  // kept per variable; the server reads them back as float32.
  GradientCompression gradient_compression = GradientCompression::kNone;
  int64_t compression_min_elements = kCompressionMinElements;
  // The job's last step (0: not known), told to the servers: one whose
  // checkpoint is beyond it refuses to serve the job.
  int64_t last_step = 0;
};

// A VarObject: the send and recv ops find it in their scope (or a parent),
// so several trainers can live in one process.
class TrainerClient : public VarObject {
 public:
  using PullDone = std::function<void(Tensor value, std::exception_ptr error)>;

  // Connects to every server, says HELLO, and tells every server to start from the newest step they
  // can all start from (RESUME; distributed.md, "Checkpoints"). Throws rill::Error naming the
  // server that could not be reached in time or refused the trainer (bad token, id taken, a
  // checkpoint beyond last_step), and when the servers have no step in common. Leaves no actor
  // running when it throws.
  TrainerClient(std::shared_ptr<Runtime> runtime, TrainerClientOptions options);
  ~TrainerClient() override;
  std::string Describe() const override;
  TrainerClient(const TrainerClient&) = delete;
  TrainerClient& operator=(const TrainerClient&) = delete;

  const TrainerClientOptions& options() const { return options_; }
  // The step the servers started from (0, or a checkpoint's).
  int64_t start_step() const { return start_step_; }
  // The step pushes carry from now on.
  void set_step(int64_t step) {
    step_.store(step);
    steps_.fetch_add(1, std::memory_order_relaxed);
  }
  int64_t step() const { return step_.load(); }

  // Sends `value` (a dense tensor or selected rows) as gradient `var` of the
  // current step to the server at `endpoint`. Encodes before returning, so the
  // caller may overwrite the value. Throws when that server is gone. Returns
  // the value's bytes as float32 and as sent (Counters).
  struct PushedBytes {
    int64_t raw = 0;
    int64_t sent = 0;
  };
  PushedBytes Push(const std::string& endpoint, const std::string& var, const Variable& value);
  // The same for several gradients to one server (a send op's bucket): the
  // dense uncompressed ones leave together in one PUSH_BUNDLE frame, the others
  // (selected rows, compressed values, empty tensors) each in its own frame.
  // Returns their bytes in all.
  PushedBytes PushAll(const std::string& endpoint,
                      const std::vector<std::pair<std::string, const Variable*>>& values);
  // Asks the server for `var` once it has applied step `min_step`; `done`
  // runs on the link's thread with the value or the error (or on this one,
  // when the value is already here). A `standing` pull asks a sync server to
  // send every later version too, as soon as it is applied: the next Pull of
  // `var` then sends nothing and takes the version that came, or waits for it
  // (the recv op pulls so; an async server answers each pull once).
  void Pull(const std::string& endpoint, const std::string& var, int64_t min_step, PullDone done,
            bool standing = false);
  // Pull, waiting for the answer.
  Tensor PullNow(const std::string& endpoint, const std::string& var, int64_t min_step);

  // Gradient bytes pushed so far: as float32 and as sent (codes and scales of
  // compressed values; selected rows' indices count in both), and the
  // set_step calls (steps) they span. The send ops' time in Push (summed over
  // pushes) and the recv ops' time waiting for parameters (CountRecvDone);
  // a trainer's step time less both is its compute.
  struct Counters {
    int64_t steps = 0;
    int64_t pushed_raw_bytes = 0;
    int64_t pushed_bytes = 0;
    int64_t push_ns = 0;
    int64_t param_wait_ns = 0;
  };
  Counters counters() const;

  // Step timing, kept by the send and recv ops (remote_ops.cc), in
  // steady_clock nanoseconds; thread-safe. A push that ran [began, ended].
  void CountPush(int64_t began_ns, int64_t ended_ns);
  // A recv op issued its pulls / had all of them answered. Waiting for
  // parameters is the time at least one recv op is pending, counted from the
  // end of the latest push: before it the trainer still computes and sends
  // (a recv is issued as soon as the step's last reader of its variable is
  // done, and in sync mode no answer comes before the step's last push).
  void CountRecvIssued(int64_t now_ns);
  void CountRecvDone(int64_t now_ns);

  // Says BYE to every live server: this trainer is done.
  void Finish();
  // The first failure of any link (null while all are healthy).
  std::exception_ptr failure() const;

  // Makes `client` the one the send and recv ops running in `scope` (or a
  // scope under it) use; nullptr removes it.
  static void Install(Scope* scope, std::shared_ptr<TrainerClient> client);
  // The client installed in `scope` or a parent. Throws kInvalidArgument when
  // there is none (a program with send/recv run outside a trainer).
  static std::shared_ptr<TrainerClient> Find(const Scope& scope);

  struct Link;

 private:
  // Connects a link to every server, then HELLO and RESUME.
  void ConnectAll();
  // The newest step every server offered (an empty offer: any step).
  int64_t CommonStartStep(const std::vector<std::vector<int64_t>>& offered) const;
  // Tells every link actor to stop (they hold the runtime's actor system open).
  void CloseLinks();
  Link& LinkFor(const std::string& endpoint);
  // Whether `values` (of a value with `elements` elements when dense) leave
  // compressed, as the options say.
  bool Compresses(const Tensor& values, int64_t elements) const;
  // The PUSH of `value`, compressed when the options say so (the codes in the
  // message). An uncompressed value is not put in the message: a copy of it
  // goes to *payload, to travel beside it.
  proto::WireMessage PushMessage(const std::string& var, const Variable& value, PushedBytes* bytes,
                                 Tensor* payload);

  std::shared_ptr<Runtime> runtime_;
  TrainerClientOptions options_;
  std::vector<std::shared_ptr<Link>> links_;
  int64_t start_step_ = 0;
  std::atomic<int64_t> step_{0};
  std::atomic<int64_t> steps_{0};
  std::atomic<int64_t> pushed_raw_bytes_{0};
  std::atomic<int64_t> pushed_bytes_{0};
  std::atomic<int64_t> push_ns_{0};
  std::atomic<int64_t> param_wait_ns_{0};
  std::mutex timing_mutex_;  // guards the three below
  int pending_recvs_ = 0;
  int64_t recvs_pending_since_ns_ = 0;
  int64_t last_push_end_ns_ = 0;
  std::mutex residuals_mutex_;  // guards the map; each vector is its own variable's
  std::map<std::string, std::vector<float>> residuals_;
};

}  // namespace rill

namespace rill {

// Before a trainer's first step: pulls every variable the `recv` ops of the
// transpiled `trainer_main` receive, as of the servers' current step, into
// `scope`, then runs the `concat` ops that join slices back into parameters.
// Every trainer so starts from the servers' values (a resumed job from its
// checkpoint's). Throws naming the server when one is gone.
void PullParameters(const proto::ProgramDesc& trainer_main, TrainerClient& client, Scope* scope);

}  // namespace rill
