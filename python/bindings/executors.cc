// rill._core's executors: Scope, the reference Executor and the actor
// ParallelExecutor, with numpy arrays in and out, and the process group of a
// collective job. Feeds are taken without a copy where they are C-contiguous,
// aligned and of a Rill dtype (Tensor::Wrap; the executor holds a reference
// to the array until no tensor views it: the array must not change while a
// step reads it); fetches are copied out, so an array never aliases memory
// the executor writes. A step runs with the
// GIL released; a rill::Error it throws comes back as the rill.Error subclass
// of its code (module.cc), and the executor stays usable.
#include <pybind11/stl.h>

#include <chrono>
#include <cstring>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "python/bindings/bindings.h"

namespace rill::python {

namespace {

// The shared arrays whose last tensor is gone, waiting for the GIL. Never
// destroyed: a tensor may outlive this module's statics at exit.
struct ReleasedArrays {
  std::mutex mutex;
  std::vector<PyObject*> arrays;
};
ReleasedArrays& Released() {
  static auto* released = new ReleasedArrays;
  return *released;
}

}  // namespace

void ReleaseFedArrays() {
  std::vector<PyObject*> arrays;
  {
    std::lock_guard<std::mutex> lock(Released().mutex);
    arrays.swap(Released().arrays);
  }
  for (PyObject* array : arrays) Py_DECREF(array);
}

Tensor TensorFromArray(const std::string& name, const py::array& given, ArrayUse use) {
  const py::array array = py::array::ensure(given, py::array::c_style);
  if (!array) throw py::error_already_set();
  DataType dtype;
  const py::dtype type = array.dtype();
  if (type.is(py::dtype::of<float>())) {
    dtype = DataType::kFloat32;
  } else if (type.is(py::dtype::of<double>())) {
    dtype = DataType::kFloat64;
  } else if (type.is(py::dtype::of<int32_t>())) {
    dtype = DataType::kInt32;
  } else if (type.is(py::dtype::of<int64_t>())) {
    dtype = DataType::kInt64;
  } else {
    Fail(ErrorCode::kInvalidArgument, "feed ", name, ": numpy dtype ",
         type.attr("name").cast<std::string>(),
         " has no Rill type (float32, float64, int32 or int64)");
  }
  Shape shape(array.shape(), array.shape() + array.ndim());
  const bool aligned = (array.flags() & py::detail::npy_api::NPY_ARRAY_ALIGNED_) != 0;
  if (use == ArrayUse::kShare && aligned) {
    PyObject* held = array.ptr();
    Py_INCREF(held);
    return Tensor::Wrap(dtype, std::move(shape), const_cast<void*>(array.data()), [held] {
      std::lock_guard<std::mutex> lock(Released().mutex);
      Released().arrays.push_back(held);
    });
  }
  Tensor tensor(dtype, shape);
  if (tensor.bytes() > 0) std::memcpy(tensor.raw_data(), array.data(), tensor.bytes());
  return tensor;
}

py::array ArrayFromTensor(const Tensor& fetched) {
  RILL_CHECK(fetched.initialized(), kInvalidArgument, "fetched tensor holds no value");
  const Tensor tensor = fetched.place().host_memory() ? fetched : fetched.CopyTo(Place::Cpu());
  return VisitDataType(tensor.dtype(), [&]<class T>() -> py::array {
    py::array_t<T> array(tensor.shape());
    if (tensor.bytes() > 0) std::memcpy(array.mutable_data(), tensor.raw_data(), tensor.bytes());
    return array;
  });
}

namespace {

FeedList FeedsFromDict(const py::dict& feed) {
  ReleaseFedArrays();
  FeedList feeds;
  for (const auto& [key, value] : feed) {
    const std::string name = py::cast<std::string>(key);
    feeds.emplace_back(name, TensorFromArray(name, py::array::ensure(value), ArrayUse::kShare));
  }
  return feeds;
}

// Also gives back the arrays the step let go of.
py::list ArraysFromTensors(const std::vector<Tensor>& tensors) {
  ReleaseFedArrays();
  py::list out;
  for (const Tensor& tensor : tensors) out.append(ArrayFromTensor(tensor));
  return out;
}

std::vector<Place> PlacesFrom(const py::object& places) {
  if (py::isinstance<py::str>(places)) return ParsePlaces(places.cast<std::string>());
  std::vector<Place> out;
  for (const auto& place : places) out.push_back(Place::Parse(py::cast<std::string>(place)));
  return out;
}

// The reference executor, with one prepared block per (program, scope) it has
// run. A program changed since it was prepared (its Program::generation moved:
// every mutable access to its desc counts) is prepared again. An entry holds
// the Python program and scope, so neither dies while the executor can still
// run them. Python threads may share it: their runs take turns.
class PythonExecutor {
 public:
  explicit PythonExecutor(const std::string& place) : executor_(Place::Parse(place)) {
    // Python runs its signal handlers only in the main thread, and only with
    // the GIL: a step there takes it back between ops every 50 ms to let them
    // run. A handler that raises (Ctrl-C) leaves its exception set, which
    // stops the step.
    executor_.set_interrupt_check([] {
      py::gil_scoped_acquire gil;
      return PyErr_CheckSignals() != 0;
    });
  }

  py::list Run(const py::object& program_object, const py::object& scope_object,
               const py::dict& feed, const std::vector<std::string>& fetches) {
    // One run at a time: a prepared block is not reentrant. Taken without the
    // GIL, so a thread running a step can take the GIL back when it ends.
    std::unique_lock<std::mutex> lock(mutex_, std::defer_lock);
    {
      py::gil_scoped_release released;
      lock.lock();
    }
    const Program& program = program_object.cast<const Program&>();
    Scope& scope = scope_object.cast<Scope&>();
    Entry& entry = entries_[{&program, &scope}];
    if (!entry.block || entry.generation != program.generation()) {
      entry = {};
      entry.block = executor_.Prepare(program.desc(), &scope);
      entry.generation = program.generation();
      entry.program = program_object;
      entry.scope = scope_object;
    }
    FeedList feeds = FeedsFromDict(feed);
    std::vector<Tensor> fetched;
    try {
      py::gil_scoped_release released;
      fetched = executor_.Run(*entry.block, feeds, fetches);
    } catch (const Error& error) {
      // Stopped by a signal handler's exception: raise that (KeyboardInterrupt).
      if (error.code() == ErrorCode::kCancelled && PyErr_Occurred()) throw py::error_already_set();
      throw;
    }
    return ArraysFromTensors(fetched);
  }

 private:
  struct Entry {
    std::unique_ptr<PreparedBlock> block;
    uint64_t generation = 0;  // Program::generation() when prepared
    py::object program, scope;
  };
  std::mutex mutex_;  // held by the one thread running a step
  Executor executor_;
  std::map<std::pair<const Program*, const Scope*>, Entry> entries_;
};

// The result of an iteration of the actor executor, waited for without the
// GIL; every 50 ms the GIL is taken back to run Python's signal handlers, and
// one that raises (Ctrl-C) ends the wait with its exception. The iteration
// then finishes on its own and its result is dropped.
std::vector<Tensor> WaitForIteration(std::future<std::vector<Tensor>>& future) {
  for (;;) {
    {
      py::gil_scoped_release released;
      if (future.wait_for(std::chrono::milliseconds(50)) == std::future_status::ready) break;
    }
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
  }
  py::gil_scoped_release released;
  return future.get();
}

// An iteration started by ParallelExecutor.run_async. It holds the executor's
// Python object: an executor destroyed first would cancel the iteration.
class PendingRun {
 public:
  PendingRun(std::future<std::vector<Tensor>> future, py::object executor)
      : future_(std::move(future)), executor_(std::move(executor)) {}

  bool Done() const {
    // An invalid future is one whose result was taken: finished.
    return !future_.valid() ||
           future_.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  }
  // Waits without the GIL; raises what the iteration failed with. Once only.
  py::list Result() {
    RILL_CHECK(future_.valid(), kInvalidArgument, "result() was already taken from this run");
    return ArraysFromTensors(WaitForIteration(future_));
  }

 private:
  std::future<std::vector<Tensor>> future_;
  py::object executor_;
};

// The actor executor over a scope the Python object keeps alive.
// With a process group, one rank of a collective job (PrepareCollective: the
// broadcast from rank 0, then the program with its merges across processes).
class PythonParallelExecutor {
 public:
  PythonParallelExecutor(const Program& program, py::object scope, const py::object& places,
                         const ExecutionStrategy& strategy, const BuildStrategy& build,
                         std::shared_ptr<ProcessGroup> group)
      : scope_(std::move(scope)) {
    ParallelExecutorOptions options;
    options.places = PlacesFrom(places);
    options.strategy = strategy;
    options.build = build;
    // Off until rill.trace switches it on; attached now so that an executor
    // built before a `with rill.trace(...)` block is traced inside it.
    options.strategy.trace = TraceRecorder::ForProcess();
    Scope* in = &scope_.cast<Scope&>();
    py::gil_scoped_release released;  // the broadcast waits for the other ranks
    proto::ProgramDesc desc = program.desc();
    if (group) desc = PrepareCollective(std::move(group), desc, in, options.build);
    executor_ = std::make_unique<ParallelExecutor>(desc, in, options);
  }
  ~PythonParallelExecutor() {
    {
      py::gil_scoped_release released;  // its threads never take the GIL; do not hold it meanwhile
      executor_.reset();
    }
    ReleaseFedArrays();
  }

  // The calling thread helps run the iteration (ParallelExecutor::Run), so a
  // signal handler (Ctrl-C) runs when the step ends.
  py::list Run(const py::dict& feed, const std::vector<std::string>& fetches) {
    FeedList feeds = FeedsFromDict(feed);
    std::vector<Tensor> fetched;
    {
      py::gil_scoped_release released;
      fetched = executor_->Run(feeds, fetches);
    }
    return ArraysFromTensors(fetched);
  }

  // Starts one iteration; waits without the GIL while the executor has as
  // many in flight as it allows.
  PendingRun RunAsync(const py::object& self, const py::dict& feed,
                      const std::vector<std::string>& fetches) {
    FeedList feeds = FeedsFromDict(feed);
    std::future<std::vector<Tensor>> future;
    {
      py::gil_scoped_release released;
      future = executor_->RunAsync(feeds, fetches);
    }
    return PendingRun(std::move(future), self);
  }

 private:
  py::object scope_;  // declared first: the executor goes before the scope it runs in
  std::unique_ptr<ParallelExecutor> executor_;
};

void BindScope(py::module_& module) {
  py::class_<Scope, std::shared_ptr<Scope>>(module, "Scope", "Variables by name (rill/scope.h).")
      .def(py::init<>())
      .def("var_names", &Scope::LocalVarNames)
      .def("has_var",
           [](const Scope& s, const std::string& name) { return s.FindVar(name) != nullptr; })
      .def(
          "get",
          [](const Scope& s, const std::string& name) {
            return ArrayFromTensor(s.GetTensor(name));
          },
          py::arg("name"), "A copy of variable `name`'s tensor.")
      .def(
          "set",
          [](Scope& s, const std::string& name, const py::array& value) {
            *s.Var(name)->mutable_tensor() = TensorFromArray(name, value);
          },
          py::arg("name"), py::arg("value"), "Sets variable `name` to a copy of `value`.");
}

}  // namespace

void BindCheckpoints(py::module_& module) {
  module.def(
      "save_checkpoint",
      [](const Program& program, const Scope& scope, const std::string& path,
         std::optional<int64_t> step) {
        SaveCheckpoint(program.desc(), scope, path, step.value_or(kNoStep));
      },
      py::arg("program"), py::arg("scope"), py::arg("path"), py::arg("step") = py::none());
  module.def(
      "load_checkpoint",
      [](const Program& program, Scope& scope, const std::string& path) -> std::optional<int64_t> {
        const int64_t step = LoadCheckpoint(program.desc(), &scope, path);
        if (step == kNoStep) return std::nullopt;
        return step;
      },
      py::arg("program"), py::arg("scope"), py::arg("path"));
}

// A collective's array: C-contiguous float32 or float64 (a copy when the
// given one is not), named in errors as `what`.
py::array CollectiveArray(const py::array& given, const char* what) {
  py::array array = py::array::ensure(given, py::array::c_style);
  if (!array) throw py::error_already_set();
  const bool floats =
      array.dtype().is(py::dtype::of<float>()) || array.dtype().is(py::dtype::of<double>());
  RILL_CHECK(floats, kInvalidArgument, what, ": numpy dtype ",
             array.dtype().attr("name").cast<std::string>(), " (float32 or float64 only)");
  return array;
}

void BindProcessGroup(py::module_& module) {
  py::class_<ProcessGroup, std::shared_ptr<ProcessGroup>>(
      module, "ProcessGroup", "A rank of a collective job (rill/process_group.h).")
      .def(py::init([](int rank, int world_size, const std::string& master,
                       const std::string& token, int64_t timeout_ms, int64_t heartbeat_ms,
                       int64_t peer_timeout_ms, const std::string& bind_host) {
             ProcessGroupOptions options;
             options.rank = rank;
             options.world_size = world_size;
             options.master = master;
             options.token = token;
             options.timeout = std::chrono::milliseconds(timeout_ms);
             options.heartbeat = std::chrono::milliseconds(heartbeat_ms);
             options.peer_timeout = std::chrono::milliseconds(peer_timeout_ms);
             options.bind_host = bind_host;
             py::gil_scoped_release released;  // the rendezvous waits for the other ranks
             return std::make_shared<ProcessGroup>(options);
           }),
           py::arg("rank"), py::arg("world_size"), py::arg("master"), py::arg("token"),
           py::arg("timeout_ms"), py::arg("heartbeat_ms"), py::arg("peer_timeout_ms"),
           py::arg("bind_host"))
      .def_static(
          "from_environment",
          [](int64_t timeout_ms) {
            const auto options =
                ProcessGroup::OptionsFromEnvironment(std::chrono::milliseconds(timeout_ms));
            py::gil_scoped_release released;
            return std::make_shared<ProcessGroup>(options);
          },
          py::arg("timeout_ms"))
      .def_property_readonly("rank", &ProcessGroup::rank)
      .def_property_readonly("world_size", &ProcessGroup::world_size)
      .def_property_readonly("master_port", &ProcessGroup::master_port)
      .def("describe", &ProcessGroup::Describe)
      .def("finish", &ProcessGroup::Finish, py::call_guard<py::gil_scoped_release>(),
           "Waits for every rank to finish, then leaves (what the destructor would do, "
           "without the GIL).")
      .def(
          "allreduce",
          [](ProcessGroup& group, const py::array& given) {
            // A copy: the caller's array is never written.
            py::array out = py::array(CollectiveArray(given, "allreduce")).attr("copy")();
            const bool single = out.dtype().is(py::dtype::of<float>());
            void* data = out.mutable_data();
            const size_t count = static_cast<size_t>(out.size());
            py::gil_scoped_release released;
            if (single) {
              group.AllreduceSum(static_cast<float*>(data), count);
            } else {
              group.AllreduceSum(static_cast<double*>(data), count);
            }
            return out;
          },
          py::arg("array"))
      .def(
          "broadcast",
          [](ProcessGroup& group, const py::array& given, int root) {
            py::array out = py::array(CollectiveArray(given, "broadcast")).attr("copy")();
            void* data = out.mutable_data();
            const size_t bytes = static_cast<size_t>(out.nbytes());
            py::gil_scoped_release released;
            group.Broadcast(data, bytes, root);
            return out;
          },
          py::arg("array"), py::arg("root") = 0);
}

// The distribute transpiler (rill/transpiler.h): the trainer's programs and
// one (endpoint, main, startup) per server, as Programs.
py::dict TranspileForPython(const Program& main, const Program& startup, int trainers,
                            const std::vector<std::string>& pservers, bool sync_mode,
                            int64_t min_slice_rows, int64_t min_slice_elements,
                            int64_t send_fuse_bytes) {
  TranspileOptions options;
  options.trainers = trainers;
  options.pservers = pservers;
  options.sync_mode = sync_mode;
  options.min_slice_rows = min_slice_rows;
  options.min_slice_elements = min_slice_elements;
  options.send_fuse_bytes = send_fuse_bytes;
  TranspileResult result = Transpile(main.desc(), startup.desc(), options);
  py::dict out;
  out["summary"] = result.Summary();
  out["trainer_main"] = Program(std::move(result.trainer_main));
  out["trainer_startup"] = Program(std::move(result.trainer_startup));
  py::list servers;
  for (ServerProgram& server : result.servers) {
    servers.append(py::make_tuple(server.endpoint, Program(std::move(server.main)),
                                  Program(std::move(server.startup))));
  }
  out["servers"] = servers;
  return out;
}

WireLimits LimitsFor(int64_t max_message_mb) {
  RILL_CHECK(max_message_mb >= 1, kInvalidArgument, "max_message_mb must be at least 1, is ",
             max_message_mb);
  WireLimits limits;
  limits.max_message_bytes = static_cast<size_t>(max_message_mb) << 20;
  return limits;
}

// A parameter server with a runtime of its own; Serve and the destructor
// wait without the GIL.
class PythonParameterServer {
 public:
  PythonParameterServer(const Program& main, const Program& startup, ParameterServerOptions options,
                        int threads) {
    RILL_CHECK(threads >= 1, kInvalidArgument, "threads must be at least 1, is ", threads);
    proto::ProgramDesc main_desc = main.desc(), startup_desc = startup.desc();
    py::gil_scoped_release released;  // the startup program and a checkpoint's load
    runtime_ = std::make_shared<Runtime>(threads, 1);
    server_ =
        std::make_unique<ParameterServer>(main_desc, startup_desc, std::move(options), runtime_);
  }
  ~PythonParameterServer() {
    py::gil_scoped_release released;
    server_.reset();
  }
  void Serve() {
    py::gil_scoped_release released;
    server_->Serve();
  }
  uint16_t port() const { return server_->port(); }
  int64_t step() const { return server_->step(); }
  std::vector<int64_t> start_steps() const { return server_->start_steps(); }

 private:
  std::shared_ptr<Runtime> runtime_;
  std::unique_ptr<ParameterServer> server_;
};

// A trainer's client: connects to its servers, pulls the parameters the
// trainer program starts from into `scope`, and installs itself there for
// the send and recv ops (TrainerClient::Install). Waits without the GIL.
class PythonTrainerClient {
 public:
  PythonTrainerClient(const Program& program, py::object scope, TrainerClientOptions options,
                      int threads)
      : scope_(std::move(scope)) {
    RILL_CHECK(threads >= 1, kInvalidArgument, "threads must be at least 1, is ", threads);
    Scope* in = &scope_.cast<Scope&>();
    proto::ProgramDesc desc = program.desc();
    py::gil_scoped_release released;
    auto runtime = std::make_shared<Runtime>(threads, 1);
    client_ = std::make_shared<TrainerClient>(std::move(runtime), std::move(options));
    PullParameters(desc, *client_, in);
    TrainerClient::Install(in, client_);
  }
  ~PythonTrainerClient() {
    py::gil_scoped_release released;  // the scope may hold the last reference
    client_.reset();
  }
  void Finish() {
    py::gil_scoped_release released;
    client_->Finish();
  }
  TrainerClient& client() { return *client_; }

 private:
  py::object scope_;
  std::shared_ptr<TrainerClient> client_;
};

void BindParameterServers(py::module_& module) {
  module.def("transpile", &TranspileForPython, py::arg("main"), py::arg("startup"),
             py::arg("trainers"), py::arg("pservers"), py::arg("sync_mode") = true,
             py::arg("min_slice_rows") = 8, py::arg("min_slice_elements") = 8192,
             py::arg("send_fuse_bytes") = TranspileOptions{}.send_fuse_bytes,
             "Splits a program with a placeable block into trainer and server programs.");
  py::class_<PythonParameterServer>(module, "ParameterServer",
                                    "A parameter server (rill/pserver.h).")
      .def(py::init([](const Program& main, const Program& startup, const std::string& endpoint,
                       const std::string& bind, const std::string& token,
                       const std::string& checkpoint, int64_t checkpoint_every, int heartbeat_ms,
                       int peer_timeout_ms, int connect_timeout_ms, int64_t max_message_mb,
                       int threads) {
             ParameterServerOptions options;
             options.endpoint = endpoint;
             options.bind = bind;
             options.token = token;
             options.checkpoint_path = checkpoint;
             options.checkpoint_every = checkpoint_every;
             options.heartbeat = std::chrono::milliseconds(heartbeat_ms);
             options.peer_timeout = std::chrono::milliseconds(peer_timeout_ms);
             options.connect_timeout = std::chrono::milliseconds(connect_timeout_ms);
             options.limits = LimitsFor(max_message_mb);
             return std::make_unique<PythonParameterServer>(main, startup, std::move(options),
                                                            threads);
           }),
           py::arg("main"), py::arg("startup"), py::arg("endpoint"), py::arg("bind"),
           py::arg("token"), py::arg("checkpoint"), py::arg("checkpoint_every"),
           py::arg("heartbeat_ms"), py::arg("peer_timeout_ms"), py::arg("connect_timeout_ms"),
           py::arg("max_message_mb"), py::arg("threads"))
      .def("serve", &PythonParameterServer::Serve,
           "Serves until every trainer said BYE (without the GIL).")
      .def_property_readonly("port", &PythonParameterServer::port)
      .def_property_readonly("step", &PythonParameterServer::step)
      .def_property_readonly("start_steps", &PythonParameterServer::start_steps);
  py::class_<PythonTrainerClient>(module, "TrainerClient",
                                  "A trainer's links to its servers (rill/trainer_client.h).")
      .def(py::init([](const Program& program, py::object scope, int trainer_id,
                       const std::vector<std::string>& pservers, const std::string& token,
                       int heartbeat_ms, int peer_timeout_ms, int connect_timeout_ms,
                       int64_t max_message_mb, int64_t last_step,
                       const std::string& gradient_compression, int threads) {
             TrainerClientOptions options;
             options.trainer_id = trainer_id;
             options.pservers = pservers;
             options.token = token;
             options.heartbeat = std::chrono::milliseconds(heartbeat_ms);
             options.peer_timeout = std::chrono::milliseconds(peer_timeout_ms);
             options.connect_timeout = std::chrono::milliseconds(connect_timeout_ms);
             options.limits = LimitsFor(max_message_mb);
             options.last_step = last_step;
             options.gradient_compression = ParseGradientCompression(gradient_compression);
             return std::make_unique<PythonTrainerClient>(program, std::move(scope),
                                                          std::move(options), threads);
           }),
           py::arg("program"), py::arg("scope"), py::arg("trainer_id"), py::arg("pservers"),
           py::arg("token"), py::arg("heartbeat_ms"), py::arg("peer_timeout_ms"),
           py::arg("connect_timeout_ms"), py::arg("max_message_mb"), py::arg("last_step"),
           py::arg("gradient_compression"), py::arg("threads"))
      .def_property_readonly("start_step",
                             [](PythonTrainerClient& c) { return c.client().start_step(); })
      .def_property_readonly("step", [](PythonTrainerClient& c) { return c.client().step(); })
      .def(
          "set_step", [](PythonTrainerClient& c, int64_t step) { c.client().set_step(step); },
          py::arg("step"))
      .def("describe", [](PythonTrainerClient& c) { return c.client().Describe(); })
      .def("counters",
           [](PythonTrainerClient& c) {
             const TrainerClient::Counters n = c.client().counters();
             py::dict out;
             out["steps"] = n.steps;
             out["pushed_raw_bytes"] = n.pushed_raw_bytes;
             out["pushed_bytes"] = n.pushed_bytes;
             out["push_seconds"] = static_cast<double>(n.push_ns) / 1e9;
             out["param_wait_seconds"] = static_cast<double>(n.param_wait_ns) / 1e9;
             return out;
           })
      .def("finish", &PythonTrainerClient::Finish, "Says BYE to every server (without the GIL).");
}

// The executor's settings (rill/execution_strategy.h, rill/build_strategy.h)
// as objects with a property per field; enums as their names.
void BindStrategies(py::module_& module) {
  py::class_<ExecutionStrategy>(module, "ExecutionStrategy",
                                "How the actor executor runs a graph (rill/execution_strategy.h).")
      .def(py::init<>())
      .def_readwrite("num_threads", &ExecutionStrategy::num_threads,
                     "Threads that run kernels (0: the machine's cores).")
      .def_readwrite("max_iterations_in_flight", &ExecutionStrategy::max_iterations_in_flight,
                     "Iterations at once (above 1 only for programs without state: inference).")
      .def_readwrite("blas_threads", &ExecutionStrategy::blas_threads,
                     "OpenBLAS threads, process-wide (0: cores / num_threads).")
      .def_readwrite("release_memory_early", &ExecutionStrategy::release_memory_early,
                     "Free an intermediate's buffer once its last reader ran.")
      .def_readwrite("release_min_bytes", &ExecutionStrategy::release_min_bytes,
                     "Only for variables of at least this many bytes.")
      .def_property(
          "dependency_wait",
          [](const ExecutionStrategy& s) {
            return s.dependency_wait == DependencyWait::kEvent ? "event" : "stream_sync";
          },
          [](ExecutionStrategy& s, const std::string& v) {
            RILL_CHECK(v == "event" || v == "stream_sync", kInvalidArgument, "dependency_wait \"",
                       v, "\" is neither \"event\" nor \"stream_sync\"");
            s.dependency_wait = v == "event" ? DependencyWait::kEvent : DependencyWait::kStreamSync;
          },
          "How an op waits for a producer on another stream: \"event\" or \"stream_sync\".")
      .def_property(
          "linger_poll",
          [](const ExecutionStrategy& s) {
            return s.linger_poll == LingerPoll::kPause   ? "pause"
                   : s.linger_poll == LingerPoll::kYield ? "yield"
                                                         : "auto";
          },
          [](ExecutionStrategy& s, const std::string& v) {
            RILL_CHECK(v == "auto" || v == "pause" || v == "yield", kInvalidArgument,
                       "linger_poll \"", v, "\" is not \"auto\", \"pause\" or \"yield\"");
            s.linger_poll = v == "pause"   ? LingerPoll::kPause
                            : v == "yield" ? LingerPoll::kYield
                                           : LingerPoll::kAuto;
          },
          "How an idle thread polls while it lingers: \"auto\", \"pause\" or \"yield\".")
      .def_property(
          "spin_before_sleep_us",
          [](const ExecutionStrategy& s) { return s.spin_before_sleep.count(); },
          [](ExecutionStrategy& s, int64_t us) {
            RILL_CHECK(us >= 0, kInvalidArgument, "spin_before_sleep_us must be >= 0, is ", us);
            s.spin_before_sleep = std::chrono::microseconds(us);
          },
          "How long an idle stream polls before its thread sleeps.")
      .def_property(
          "watchdog_timeout_ms",
          [](const ExecutionStrategy& s) { return s.watchdog_timeout.count(); },
          [](ExecutionStrategy& s, int64_t ms) {
            RILL_CHECK(ms >= 0, kInvalidArgument, "watchdog_timeout_ms must be >= 0, is ", ms);
            s.watchdog_timeout = std::chrono::milliseconds(ms);
          },
          "An iteration with no op finishing this long is reported, and failed when no op "
          "runs (0: no watchdog).");
  py::class_<BuildStrategy>(module, "BuildStrategy",
                            "How the graph of several places is built (rill/build_strategy.h).")
      .def(py::init<>())
      .def_property(
          "reduce_strategy",
          [](const BuildStrategy& b) {
            return b.reduce == ReduceStrategy::kReduce ? "reduce" : "allreduce";
          },
          [](BuildStrategy& b, const std::string& v) {
            RILL_CHECK(v == "allreduce" || v == "reduce", kInvalidArgument, "reduce_strategy \"", v,
                       "\" is neither \"allreduce\" nor \"reduce\"");
            b.reduce = v == "reduce" ? ReduceStrategy::kReduce : ReduceStrategy::kAllReduce;
          },
          "\"allreduce\" (every place updates its copy) or \"reduce\" (each parameter once, on "
          "its owner place).")
      .def_readwrite("fuse_bytes", &BuildStrategy::fuse_bytes,
                     "Gradients merged between places in buckets of up to this many bytes.")
      .def_readwrite("process_fuse_bytes", &BuildStrategy::process_fuse_bytes,
                     "The same across processes (a process group's allreduce).")
      .def_property(
          "gradient_compression",
          [](const BuildStrategy& b) { return GradientCompressionName(b.gradient_compression); },
          [](BuildStrategy& b, const std::string& v) {
            b.gradient_compression = ParseGradientCompression(v);
          },
          "\"none\", \"int8\" or \"int4\": large float32 gradients quantized for merges.")
      .def_readwrite("compression_min_elements", &BuildStrategy::compression_min_elements,
                     "Gradients with fewer elements stay float32.");
}

void BindExecutors(py::module_& module) {
  BindScope(module);
  BindStrategies(module);
  BindProcessGroup(module);
  BindParameterServers(module);
  BindCheckpoints(module);
  py::class_<PythonExecutor>(module, "Executor", "The sequential reference executor.")
      .def(py::init<const std::string&>(), py::arg("place") = "cpu")
      .def("run", &PythonExecutor::Run, py::arg("program"), py::arg("scope"), py::arg("feed"),
           py::arg("fetch_list"));
  py::class_<PythonParallelExecutor>(module, "ParallelExecutor", "The actor executor.")
      .def(py::init<const Program&, py::object, const py::object&, const ExecutionStrategy&,
                    const BuildStrategy&, std::shared_ptr<ProcessGroup>>(),
           py::arg("program"), py::arg("scope"), py::arg("places"), py::arg("exec_strategy"),
           py::arg("build_strategy"), py::arg("process_group") = nullptr)
      .def("run", &PythonParallelExecutor::Run, py::arg("feed"), py::arg("fetch_list"))
      .def(
          "run_async",
          [](py::object self, const py::dict& feed, const std::vector<std::string>& fetches) {
            return self.cast<PythonParallelExecutor&>().RunAsync(self, feed, fetches);
          },
          py::arg("feed"), py::arg("fetch_list"));
  py::class_<PendingRun>(module, "PendingRun", "An iteration started by run_async.")
      .def("done", &PendingRun::Done, "True once the iteration has finished.")
      .def("result", &PendingRun::Result,
           "The fetched values as ndarrays, waiting for them (without the GIL); raises what the "
           "iteration failed with.");
}

}  // namespace rill::python
