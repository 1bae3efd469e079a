#include "rill/process_group.h"

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "actors/distributed/collective_sequence.h"
#include "actors/distributed/gloo_interrupt.h"
#include "actors/distributed/rendezvous_store.h"
#include "actors/distributed/sync_allreduce.h"
#include "gloo/allgather.h"
#include "gloo/broadcast.h"
#include "gloo/math.h"
#include "gloo/rendezvous/context.h"
#include "gloo/transport/tcp/device.h"
#include "rill/data_type.h"
#include "rill/error.h"
#include "rill/shape.h"

namespace rill {
namespace {

constexpr const char* kGroupVar = "@PROCESS_GROUP@";

std::string Env(const char* name, bool required) {
  const char* value = std::getenv(name);
  RILL_CHECK(!required || (value != nullptr && *value != '\0'), kInvalidArgument,
             "the environment variable ", name, " is not set (rill launch --collective sets it)");
  return value == nullptr ? "" : value;
}

int EnvInt(const char* name) {
  const std::string text = Env(name, true);
  char* end = nullptr;
  const long value = std::strtol(text.c_str(), &end, 10);
  RILL_CHECK(end != text.c_str() && *end == '\0' && value >= 0 && value < (1 << 20),
             kInvalidArgument, "the environment variable ", name, "=\"", text, "\" is not a count");
  return static_cast<int>(value);
}

// Gloo's keys under `prefix`, for a second full mesh of pairs over the same
// store. Not Gloo's PrefixStore: its wait without a timeout waits 30 s, not ours.
class PrefixedStore : public gloo::rendezvous::Store {
 public:
  PrefixedStore(gloo::rendezvous::Store& store, std::string prefix)
      : store_(store), prefix_(std::move(prefix)) {}
  void set(const std::string& key, const std::vector<char>& data) override {
    store_.set(prefix_ + key, data);
  }
  std::vector<char> get(const std::string& key) override { return store_.get(prefix_ + key); }
  void wait(const std::vector<std::string>& keys) override { store_.wait(Prefixed(keys)); }
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override {
    store_.wait(Prefixed(keys), timeout);
  }

 private:
  std::vector<std::string> Prefixed(const std::vector<std::string>& keys) const {
    std::vector<std::string> prefixed;
    for (const std::string& key : keys) prefixed.push_back(prefix_ + key);
    return prefixed;
  }
  gloo::rendezvous::Store& store_;
  const std::string prefix_;
};

std::string ArrivedKey(int rank) { return StrCat("rill/arrived/", rank); }
std::string DoneKey(int rank) { return StrCat("rill/done/", rank); }

// "rank N" for the key of rank N under `prefix`.
std::string RankOfKey(const std::string& key, const std::string& prefix) {
  if (key.rfind(prefix, 0) != 0) return StrCat("key \"", key, "\"");
  return StrCat("rank ", key.substr(prefix.size()));
}

}  // namespace

class ProcessGroup::Impl {
 public:
  explicit Impl(const ProcessGroupOptions& options) : options_(options) {
    RILL_CHECK(options.world_size >= 1 && options.rank >= 0 && options.rank < options.world_size,
               kInvalidArgument, "rank ", options.rank, " is not in a group of ",
               options.world_size, " processes");
    RendezvousStore::Options store;
    store.rank = options.rank;
    store.world_size = options.world_size;
    store.master = ParseEndpoint(options.master);
    store.token = options.token;
    store.timeout = options.timeout;
    store.heartbeat = options.heartbeat;
    store.peer_timeout = options.peer_timeout;
    try {
      store_ = std::make_unique<RendezvousStore>(store);
    } catch (const Error& error) {
      Fail(error.code(), "rank ", options.rank, " of ", options.world_size,
           options.rank == 0 ? ": cannot open the rendezvous store at "
                             : ": cannot join the rendezvous store of rank 0 at ",
           options.master, ": ", error.message());
    }
    Meet();
    ConnectGloo();
    watcher_ = std::thread([this] { WatchForLostRanks(); });
  }

  ~Impl() { Finish(); }

  // A rank that ends normally waits for every rank to finish its collectives
  // before its Gloo pairs close (a rank that closed early would break the
  // last allreduce of a slower one), then says goodbye; rank 0 keeps its
  // store up until the others have left. A rank that ends on an error (a
  // broken group, or an exception unwinding) leaves at once and without a
  // goodbye: rank 0 reports it lost, and the others' collectives fail naming
  // it instead of waiting for it. Once only; later collectives throw.
  void Finish() {
    std::lock_guard<std::mutex> finishing(finish_mutex_);
    if (finished_) return;
    finished_ = true;
    // From here a rank that leaves is waited for (or named) by the store.
    watching_ = false;
    watcher_.join();
    bool all_done = false;
    std::unique_lock<std::mutex> lock(mutex_);  // after a collective in flight
    if (!broken_ && std::uncaught_exceptions() == 0) {
      try {
        store_->Set(DoneKey(options_.rank), "");
        std::vector<std::string> keys;
        for (int r = 0; r < options_.world_size; ++r) keys.push_back(DoneKey(r));
        store_->Get(keys, options_.timeout, {}, /*fail_on_lost=*/true);
        all_done = true;
      } catch (const std::exception&) {
        // Leaving anyway: a rank that is gone cannot be waited for.
      }
    }
    broken_ = true;
    broken_why_ = "this rank has finished with the group";
    float_sum_.reset();
    double_sum_.reset();
    sync_context_.reset();
    context_.reset();
    device_.reset();
    lock.unlock();
    if (all_done) store_->Leave(options_.timeout);
  }

  const ProcessGroupOptions& options() const { return options_; }
  uint16_t master_port() const { return store_->port(); }

  // The values of `parts` = their sum over the ranks times `scale`.
  template <typename T>
  void AllreduceSum(std::span<const std::span<T>> parts, T scale) {
    size_t count = 0;
    for (const std::span<T>& part : parts) count += part.size();
    if (count == 0) return;
    if (options_.world_size == 1) {
      for (const std::span<T>& part : parts) {
        for (T& value : part) value *= scale;
      }
      return;
    }
    Run(StrCat("the allreduce of ", count, " values"), [&](uint32_t /*tag*/) {
      if constexpr (std::is_same_v<T, float>) {
        float_sum_->Run(parts, scale);
      } else {
        double_sum_->Run(parts, scale);
      }
    });
  }

  void Broadcast(void* data, size_t bytes, int root) {
    RILL_CHECK(root >= 0 && root < options_.world_size, kInvalidArgument, "rank ", options_.rank,
               ": broadcast from rank ", root, ", not in a group of ", options_.world_size);
    if (options_.world_size == 1 || bytes == 0) return;
    Run(StrCat("the broadcast of ", bytes, " bytes from rank ", root), [&](uint32_t tag) {
      gloo::BroadcastOptions opts(context_);
      opts.setOutput(static_cast<uint8_t*>(data), bytes);
      opts.setRoot(root);
      opts.setTag(tag);
      opts.setTimeout(options_.timeout);
      gloo::broadcast(opts);
    });
  }

  void Allgather(const void* in, size_t bytes, void* out) {
    if (bytes == 0) return;
    if (options_.world_size == 1) {
      std::memcpy(out, in, bytes);
      return;
    }
    Run(StrCat("the allgather of ", bytes, " bytes per rank"), [&](uint32_t tag) {
      gloo::AllgatherOptions opts(context_);
      // Gloo's input is not const, and it only reads it.
      opts.setInput(static_cast<uint8_t*>(const_cast<void*>(in)), bytes);
      opts.setOutput(static_cast<uint8_t*>(out), bytes * static_cast<size_t>(options_.world_size));
      opts.setTag(tag);
      opts.setTimeout(options_.timeout);
      gloo::allgather(opts);
    });
  }

 private:
  // Every rank announces itself and waits for all the others: a rank that
  // never comes is named here, before Gloo's own (anonymous) waits.
  void Meet() {
    store_->Set(ArrivedKey(options_.rank), "");
    std::vector<std::string> keys;
    for (int r = 0; r < options_.world_size; ++r) keys.push_back(ArrivedKey(r));
    try {
      store_->Get(
          keys, options_.timeout,
          [](const std::string& key) { return RankOfKey(key, "rill/arrived/"); },
          /*fail_on_lost=*/true);
    } catch (const Error& error) {
      store_->Abort(StrCat("the rendezvous failed: ", error.message()));
      Fail(error.code(), "the rendezvous failed: ", error.message());
    }
  }

  // Gloo's TCP pairs write with writev, which raises SIGPIPE when the peer
  // has gone: by default that kills this process instead of failing the
  // collective with an error naming the lost rank. A handler the program set
  // (or an ignore) is left as it is.
  static void IgnoreSigpipeUnlessHandled() {
    struct sigaction current {};
    if (sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
      signal(SIGPIPE, SIG_IGN);
    }
  }

  void ConnectGloo() {
    IgnoreSigpipeUnlessHandled();
    try {
      gloo::transport::tcp::attr attr;
      attr.hostname = options_.bind_host;
      device_ = gloo::transport::tcp::CreateDevice(attr);
      auto context =
          std::make_shared<gloo::rendezvous::Context>(options_.rank, options_.world_size);
      context->setTimeout(options_.timeout);
      // Gloo's keys ("rank_N") do not meet Rill's ("rill/..."). Not Gloo's
      // PrefixStore: its wait without a timeout waits 30 s, not ours.
      context->connectFullMesh(*store_, device_);
      context_ = std::move(context);
      ConnectSyncPairs();
    } catch (const Error& error) {
      Fail(error.code(), "rank ", options_.rank, ": connecting the ranks' Gloo pairs (bound to ",
           options_.bind_host, ") failed: ", error.message());
    } catch (const std::exception& error) {
      Fail(ErrorCode::kUnavailable, "rank ", options_.rank,
           ": connecting the ranks' Gloo pairs (bound to ", options_.bind_host,
           ") failed: ", error.what(), Lost());
    }
  }

  // The dense sums' own pairs, in Gloo's sync mode (sync_allreduce.h says
  // why), and their allreduces, built in the same order on every rank.
  void ConnectSyncPairs() {
    if (options_.world_size == 1) return;
    PrefixedStore store(*store_, "rill/sync/");
    auto context = std::make_shared<gloo::rendezvous::Context>(options_.rank, options_.world_size);
    context->setTimeout(options_.timeout);
    context->connectFullMesh(store, device_);
    for (int r = 0; r < options_.world_size; ++r) {
      if (r != options_.rank) context->getPair(r)->setSync(true, /*busyPoll=*/false);
    }
    float_sum_ = std::make_unique<SyncAllreduce<float>>(context);
    double_sum_ = std::make_unique<SyncAllreduce<double>>(context);
    sync_context_ = std::move(context);
  }

  // Runs one collective with the next tag; a failure breaks the group and
  // names the ranks rank 0 saw leave.
  template <typename F>
  void Run(const std::string& what, F&& collective) {
    std::lock_guard<std::mutex> lock(mutex_);
    RILL_CHECK(!broken_, kUnavailable, "rank ", options_.rank, ": ", what,
               ": the process group broke at an earlier collective: ", broken_why_);
    try {
      collective(tag_++);
    } catch (const std::exception& error) {
      broken_ = true;
      // An interrupted collective's error is the news of the lost rank already;
      // one that failed by itself (a dead rank's socket) gets it appended.
      const std::string text = error.what();
      std::string news;
      {
        std::lock_guard<std::mutex> lock(news_mutex_);
        news = news_;
      }
      broken_why_ =
          !news.empty() && text.find(news) != std::string::npos ? text : StrCat(text, Lost());
      Fail(ErrorCode::kUnavailable, "rank ", options_.rank, " of ", options_.world_size, ": ", what,
           " failed: ", broken_why_);
    }
  }

  // Gloo's waits cannot be cancelled, and a stopped rank's TCP peers still
  // ack: without this, the others would wait out the whole collective
  // timeout. When rank 0's store reports a rank lost (or rank 0 itself goes),
  // every pair of this rank fails with that news: a collective in flight
  // throws it now, and any later one at once.
  void WatchForLostRanks() {
    std::string lost;
    while (watching_ && lost.empty()) lost = store_->Lost(std::chrono::milliseconds(200));
    if (lost.empty()) return;
    {
      std::lock_guard<std::mutex> lock(news_mutex_);
      news_ = lost;
    }
    InterruptGlooPairs(*context_, lost);
    if (sync_context_ != nullptr) InterruptGlooPairs(*sync_context_, lost);
  }

  // What rank 0 knows of ranks that left (given a moment to hear of a rank
  // whose death broke a collective), as "; <text>", or that none left.
  std::string Lost() {
    const std::string lost = store_->Lost(std::chrono::milliseconds(3000));
    if (lost.empty()) return "; no rank has left the group (one may have stalled)";
    return StrCat("; ", lost);
  }

  const ProcessGroupOptions options_;
  std::unique_ptr<RendezvousStore> store_;
  std::shared_ptr<gloo::transport::Device> device_;
  std::shared_ptr<gloo::Context> context_;       // broadcasts and gathers
  std::shared_ptr<gloo::Context> sync_context_;  // dense sums (world size > 1)
  std::unique_ptr<SyncAllreduce<float>> float_sum_;
  std::unique_ptr<SyncAllreduce<double>> double_sum_;
  std::mutex mutex_;
  uint32_t tag_ = 0;
  bool broken_ = false;
  std::string broken_why_;
  std::mutex finish_mutex_;
  bool finished_ = false;
  std::atomic<bool> watching_{true};
  std::mutex news_mutex_;
  std::string news_;     // what the watcher failed the pairs with
  std::thread watcher_;  // WatchForLostRanks, from the end of the constructor to the destructor
};

ProcessGroup::ProcessGroup(const ProcessGroupOptions& options)
    : impl_(std::make_unique<Impl>(options)) {}

ProcessGroup::~ProcessGroup() = default;

ProcessGroupOptions ProcessGroup::OptionsFromEnvironment(std::chrono::milliseconds timeout) {
  ProcessGroupOptions options;
  options.rank = EnvInt("RILL_RANK");
  options.world_size = EnvInt("RILL_WORLD_SIZE");
  options.master = Env("RILL_MASTER", true);
  options.token = Env("RILL_TOKEN", false);
  const std::string bind = Env("RILL_BIND_HOST", false);
  if (!bind.empty()) options.bind_host = bind;
  options.timeout = timeout;
  RILL_CHECK(options.rank < options.world_size, kInvalidArgument, "RILL_RANK=", options.rank,
             " is not below RILL_WORLD_SIZE=", options.world_size);
  return options;
}

std::shared_ptr<ProcessGroup> ProcessGroup::FromEnvironment(std::chrono::milliseconds timeout) {
  return std::make_shared<ProcessGroup>(OptionsFromEnvironment(timeout));
}

int ProcessGroup::rank() const { return impl_->options().rank; }
int ProcessGroup::world_size() const { return impl_->options().world_size; }
uint16_t ProcessGroup::master_port() const { return impl_->master_port(); }

std::string ProcessGroup::Describe() const {
  return StrCat("rank ", rank(), " of ", world_size(), " (rendezvous at ", impl_->options().master,
                ")");
}

void ProcessGroup::Finish() { impl_->Finish(); }

void ProcessGroup::AllreduceSum(float* data, size_t count) {
  const std::span<float> all(data, count);
  impl_->AllreduceSum<float>({&all, 1}, 1.0f);
}
void ProcessGroup::AllreduceSum(double* data, size_t count) {
  const std::span<double> all(data, count);
  impl_->AllreduceSum<double>({&all, 1}, 1.0);
}
void ProcessGroup::AllreduceMean(std::span<const std::span<float>> parts) {
  impl_->AllreduceSum(parts, 1.0f / static_cast<float>(world_size()));
}
void ProcessGroup::AllreduceMean(std::span<const std::span<double>> parts) {
  impl_->AllreduceSum(parts, 1.0 / static_cast<double>(world_size()));
}
void ProcessGroup::Broadcast(void* data, size_t bytes, int root) {
  impl_->Broadcast(data, bytes, root);
}
void ProcessGroup::Allgather(const void* in, size_t bytes, void* out) {
  impl_->Allgather(in, bytes, out);
}

void BroadcastPersistables(ProcessGroup& group, const proto::ProgramDesc& program, Scope* scope,
                           int root) {
  std::vector<Tensor*> tensors;
  std::string layout;  // "name dtype shape;" for each, to compare with the root's
  std::vector<std::string> names;
  for (const auto& var : program.blocks(0).vars()) {
    if (var.persistable()) names.push_back(var.name());
  }
  std::sort(names.begin(), names.end());
  for (const auto& name : names) {
    Variable* v = scope->FindVar(name);
    if (v == nullptr || v->holds_selected_rows() || v->object() != nullptr ||
        !v->tensor().initialized()) {
      continue;
    }
    Tensor* t = v->mutable_tensor();
    RILL_CHECK(t->place().host_memory(), kUnimplemented, "rank ", group.rank(), ": \"", name,
               "\" is on ", t->place().ToString(), "; process groups broadcast host memory only");
    tensors.push_back(t);
    layout += StrCat(name, " ", DataTypeName(t->dtype()), " ", ShapeToString(t->shape()), ";");
  }
  // Every rank takes part in every collective below, whatever it finds.
  double size = static_cast<double>(layout.size());
  group.Broadcast(&size, sizeof(size), root);
  std::string root_layout(static_cast<size_t>(size), '\0');
  if (group.rank() == root) root_layout = layout;
  group.Broadcast(root_layout.data(), root_layout.size(), root);
  double differ = root_layout == layout ? 0 : 1;
  group.AllreduceSum(&differ, 1);
  if (differ > 0) {
    RILL_CHECK(root_layout == layout, kInvalidArgument, "rank ", group.rank(),
               ": the persistable variables differ from rank ", root, "'s: here \"", layout,
               "\", there \"", root_layout, "\"");
    Fail(ErrorCode::kInvalidArgument, "rank ", group.rank(), ": the persistable variables of ",
         differ, " rank(s) differ from rank ", root, "'s");
  }
  for (Tensor* t : tensors) group.Broadcast(t->raw_data(), t->bytes(), root);
}

void ProcessGroup::Install(Scope* scope, std::shared_ptr<ProcessGroup> group) {
  scope->Var(kGroupVar)->set_object(std::move(group));
  CollectiveSequence::Install(scope, std::make_shared<CollectiveSequence>());
}

std::shared_ptr<ProcessGroup> ProcessGroup::Find(const Scope& scope) {
  const Variable* var = scope.FindVar(kGroupVar);
  auto group = var ? std::dynamic_pointer_cast<ProcessGroup>(var->object()) : nullptr;
  RILL_CHECK(group != nullptr, kInvalidArgument,
             "process_allreduce ops need a process group (rill train --collective, or "
             "ProcessGroup::Install)");
  return group;
}

}  // namespace rill
