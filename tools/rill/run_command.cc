// rill run: runs a program once with the reference executor, feeding .npy
// files and writing each fetched variable as a .npy file.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "rill/checkpoint.h"
#include "rill/error.h"
#include "rill/executor.h"
#include "rill/npy.h"
#include "rill/parallel_executor.h"
#include "rill/program_io.h"
#include "rill/trace_recorder.h"
#include "tools/rill/commands.h"
#include "tools/rill/flags.h"

namespace rill::cli {
namespace {

constexpr const char* kUsage = R"(usage: rill run MAIN [--startup FILE] [--checkpoint FILE]
                [--feed NAME=FILE.npy ...] [--fetch NAME ...] [--out DIR]
                [--executor actor|sequential] [--threads N] [--trace FILE]
  Runs the STARTUP program once (initialising parameters), restores the
  persistable variables of MAIN from a checkpoint if given, then runs MAIN
  once with the actor executor (or the sequential reference executor). Each fetched variable is written to
  DIR/NAME.npy (characters other than letters, digits and . _ @ - become _)
  and printed with its type, shape and first values.
  --startup FILE          program to run first, in the same scope
  --checkpoint FILE       checkpoint (from rill train --save) to load before MAIN
  --feed NAME=FILE.npy    value of variable NAME (repeatable)
  --fetch NAME            variable to fetch after the run (repeatable)
  --out DIR               where fetched .npy files go (default: current directory;
                          created if missing)
  --executor actor|sequential   which executor runs MAIN (default actor)
  --threads N             threads of the actor executor (default: the machine's cores)
  --trace FILE            record the actor executor's run as a Chrome trace
                          (Perfetto, `rill trace summarize|view`)
)";

constexpr int kValuesShown = 6;

// A file name for a variable: keeps letters, digits and . _ @ -, replaces the rest.
std::string FileNameFor(const std::string& name) {
  std::string out;
  for (char c : name) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '_' || c == '@' || c == '-';
    out += keep ? c : '_';
  }
  if (out.empty() || out == "." || out == "..") out = "_" + out;
  return out + ".npy";
}

// "[1.5, 2, 3, ...]": the first values of a tensor.
std::string FirstValues(const Tensor& tensor) {
  std::ostringstream out;
  out << "[";
  const int64_t shown = std::min<int64_t>(tensor.numel(), kValuesShown);
  VisitDataType(tensor.dtype(), [&]<class T>() {
    const T* data = tensor.data<T>();
    for (int64_t i = 0; i < shown; ++i) out << (i ? ", " : "") << data[i];
  });
  if (tensor.numel() > shown) out << ", ...";
  out << "]";
  return out.str();
}

// Runs `fn`, prefixing the message of any rill::Error with `path`.
template <class Fn>
auto InFile(const std::string& path, Fn&& fn) {
  try {
    return fn();
  } catch (const Error& e) {
    throw Error(e.code(), path + ": " + e.message());
  }
}

}  // namespace

int RunCommand(const std::vector<std::string>& args) {
  std::vector<std::string> files;
  std::string startup_path;
  std::string checkpoint_path;
  std::vector<std::string> feed_args;
  std::vector<std::string> fetches;
  std::string out_dir = ".";
  Flags flags("rill run", kUsage);
  flags.Positional("MAIN", &files, 1, 1);
  flags.String("--startup", &startup_path);
  flags.String("--checkpoint", &checkpoint_path);
  flags.StringList("--feed", &feed_args);
  flags.StringList("--fetch", &fetches);
  flags.String("--out", &out_dir);
  std::string executor_name = "actor";
  int threads = 0;
  std::string trace_path;
  flags.String("--executor", &executor_name);
  flags.String("--trace", &trace_path);
  flags.Int("--threads", &threads);
  if (int rc = flags.Parse(args); rc >= 0) return rc;

  std::vector<std::pair<std::string, std::string>> feed_files;
  std::set<std::string> feed_names;
  for (const auto& feed : feed_args) {
    const size_t eq = feed.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == feed.size()) {
      return flags.UsageError("--feed expects NAME=FILE.npy, got '" + feed + "'");
    }
    const std::string name = feed.substr(0, eq);
    if (!feed_names.insert(name).second) {
      return flags.UsageError("variable " + name + " is fed twice");
    }
    feed_files.emplace_back(name, feed.substr(eq + 1));
  }
  if (out_dir.empty()) return flags.UsageError("--out needs a directory");
  if (executor_name != "actor" && executor_name != "sequential") {
    return flags.UsageError("--executor must be actor or sequential");
  }
  if (threads < 0) return flags.UsageError("--threads must be >= 0");
  if (!trace_path.empty() && executor_name != "actor") {
    return flags.UsageError("--trace records the actor executor (--executor actor)");
  }

  const std::string& main_path = files[0];
  const proto::ProgramDesc main = LoadProgram(main_path);
  Executor executor;
  Scope scope;
  if (!startup_path.empty()) {
    const proto::ProgramDesc startup = LoadProgram(startup_path);
    InFile(startup_path, [&] { return executor.Run(startup, &scope); });
  }
  if (!checkpoint_path.empty()) LoadCheckpoint(main, &scope, checkpoint_path);
  FeedList feeds;
  for (const auto& [name, path] : feed_files) feeds.emplace_back(name, ReadNpy(path));
  const std::vector<Tensor> results = InFile(main_path, [&] {
    if (executor_name == "sequential") return executor.Run(main, &scope, feeds, fetches);
    ExecutionStrategy strategy;
    strategy.num_threads = threads;
    if (!trace_path.empty()) strategy.trace = std::make_shared<TraceRecorder>();
    ParallelExecutor actors(main, &scope, {.strategy = strategy});
    std::vector<Tensor> out = actors.Run(feeds, fetches);
    if (strategy.trace) {
      strategy.trace->WriteFile(trace_path);
      std::cerr << "trace: " << trace_path << "\n";
    }
    return out;
  });

  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) Fail(ErrorCode::kIo, out_dir, ": cannot create the output directory: ", ec.message());
  for (size_t i = 0; i < fetches.size(); ++i) {
    const std::string path = (std::filesystem::path(out_dir) / FileNameFor(fetches[i])).string();
    WriteNpy(path, results[i]);
    std::cout << fetches[i] << ": " << results[i].Describe() << " = " << FirstValues(results[i])
              << " -> " << path << "\n";
  }
  return kExitOk;
}

}  // namespace rill::cli
