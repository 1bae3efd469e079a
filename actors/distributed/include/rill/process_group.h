// ProcessGroup: the processes of one collective data-parallel job (issue 18),
// each a rank in [0, world_size). Rank 0 holds the rendezvous store (a
// key/value table on Rill's transport: every connection proves the job's
// token first); the ranks meet there, then Gloo connects every pair over TCP
// and runs the collectives on CPU buffers (allreduce: halving-doubling over
// pairs in Gloo's sync mode, actors/distributed/sync_allreduce.h; broadcast,
// allgather: Gloo's own over a second set of pairs).
//
//   auto group = ProcessGroup::FromEnvironment();  // RILL_RANK, RILL_WORLD_SIZE, ...
//   group->Broadcast(params, n);                    // rank 0's values everywhere
//   group->AllreduceSum(grads, n);                  // the sum over ranks, on every rank
//
// Every wait has a deadline (ProcessGroupOptions::timeout): a rank that never
// comes fails the rendezvous naming it, a wrong token fails at once, and a
// collective that cannot finish throws rill::Error naming this rank and what
// rank 0 knows of the lost ones. A rank that dies, or goes silent (stopped,
// hung: no heartbeat on its store connection for `peer_timeout`), is lost:
// every other rank's collective in flight, or its next one, fails within
// about peer_timeout naming it, however long `timeout` is. After a failed
// collective the group is broken: every later one throws at once.
//
// A process group sets SIGPIPE to ignored when it is still at its default
// (Gloo's writes to a rank that died would otherwise end this process with
// it, and no message).
//
// Thread-safety: collectives are issued one at a time (they are serialized by
// a mutex); every rank must issue the same collectives in the same order.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "rill/build_strategy.h"
#include "rill/proto/program.pb.h"
#include "rill/scope.h"

namespace rill {

struct ProcessGroupOptions {
  int rank = 0;
  int world_size = 1;
  // host:port of rank 0's rendezvous store (rank 0 listens there; port 0:
  // any free port, see ProcessGroup::master_port).
  std::string master = "127.0.0.1:0";
  std::string token;  // the job's; the same on every rank
  // The rendezvous (every rank arrives, Gloo connects) and each collective.
  std::chrono::milliseconds timeout{10000};
  // Every rank and rank 0's store heartbeat each other this often; a rank (or
  // rank 0) silent for peer_timeout is lost. peer_timeout must be above heartbeat.
  std::chrono::milliseconds heartbeat{1000};
  std::chrono::milliseconds peer_timeout{5000};
  // The address Gloo's TCP device binds to, and that the other ranks reach
  // this one at.
  std::string bind_host = "127.0.0.1";
};

class ProcessGroup : public VarObject {
 public:
  // Joins the group: meets the other ranks at rank 0's store, then connects
  // Gloo. Throws rill::Error naming this rank and the rank, peer or step that failed.
  explicit ProcessGroup(const ProcessGroupOptions& options);
  // Options from RILL_RANK, RILL_WORLD_SIZE, RILL_MASTER, RILL_TOKEN and
  // RILL_BIND_HOST (optional, default 127.0.0.1). Throws kInvalidArgument
  // naming a variable that is missing or malformed.
  static ProcessGroupOptions OptionsFromEnvironment(std::chrono::milliseconds timeout);
  static std::shared_ptr<ProcessGroup> FromEnvironment(
      std::chrono::milliseconds timeout = std::chrono::milliseconds(10000));
  // Waits (up to the timeout) for every rank to finish, then leaves. Destroyed
  // while an exception unwinds, or after a failed collective, it leaves at
  // once without a goodbye, so the other ranks fail naming this one. Never throws.
  ~ProcessGroup() override;
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;
  // What the destructor does, now: waits (up to the timeout) for every rank
  // to finish, then leaves (at once after a failed collective); later
  // collectives throw kUnavailable. For a caller that must not wait in a
  // destructor (Python's, which holds the GIL). Never throws; once only.
  void Finish();

  int rank() const;
  int world_size() const;
  // Rank 0: the port its store listens on.
  uint16_t master_port() const;
  // "rank 1 of 3 (rendezvous at 127.0.0.1:7170)".
  std::string Describe() const override;

  // Sums `count` values over the ranks, in place; every rank gets the same bits.
  void AllreduceSum(float* data, size_t count);
  void AllreduceSum(double* data, size_t count);
  // The values of `parts`, taken one after the other, = their mean over the
  // ranks (the sum times 1 / world_size), in place: the gradients of a bucket
  // without packing them into one buffer first. Every rank gets the same bits.
  void AllreduceMean(std::span<const std::span<float>> parts);
  void AllreduceMean(std::span<const std::span<double>> parts);
  // Rank `root`'s `bytes` bytes at `data` on every rank.
  void Broadcast(void* data, size_t bytes, int root = 0);
  // Every rank's `bytes` bytes at `in`, in rank order, at `out` (world_size *
  // bytes) on every rank. Every rank gives the same `bytes`.
  void Allgather(const void* in, size_t bytes, void* out);

  // Where an executor's ops find the group (the process_allreduce op), with
  // the sequence that issues their collectives in their global order.
  static void Install(Scope* scope, std::shared_ptr<ProcessGroup> group);
  static std::shared_ptr<ProcessGroup> Find(const Scope& scope);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// Everything a rank does before its executor runs `program` (block
// `block_index`) with the group: BroadcastPersistables from rank 0, the group
// installed in `scope` (ProcessGroup::Install), and the program returned with
// a process_allreduce op after each bucket of parameter gradients (bucketed
// by build.process_fuse_bytes, float32 ones sent as build.gradient_compression says).
// Run the result with the same `build` (several places per process need
// ReduceStrategy::kReduce):
//
//   auto group = ProcessGroup::FromEnvironment();
//   ParallelExecutor exe(PrepareCollective(group, main.desc(), &scope, build), &scope,
//                        {.places = ParsePlaces("cpu"), .build = build});
proto::ProgramDesc PrepareCollective(std::shared_ptr<ProcessGroup> group,
                                     const proto::ProgramDesc& program, Scope* scope,
                                     const BuildStrategy& build, int block_index = 0);

// Rank `root`'s values of the persistable dense variables of `program`'s
// block 0 that `scope` holds (parameters, optimizer state, the learning rate)
// on every rank, in name order: every rank starts from the same state. First
// the ranks compare the variables' names, dtypes and shapes; when one differs
// every rank throws kInvalidArgument naming it. Call it on every rank.
void BroadcastPersistables(ProcessGroup& group, const proto::ProgramDesc& program, Scope* scope,
                           int root = 0);

}  // namespace rill
