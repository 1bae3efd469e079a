// rill run: runs a program once with the reference executor, feeding .npy
// files and writing each fetched variable as a .npy file.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
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

struct RunFlags {
  std::string main;
  std::string startup;
  std::string checkpoint;
  std::vector<std::string> feeds;  // NAME=FILE.npy
  std::vector<std::string> fetches;
  std::string out = ".";
  std::string executor = "actor";
  int threads = 0;
  std::string trace;
};

int Run(const RunFlags& flags) {
  std::vector<std::pair<std::string, std::string>> feed_files;
  std::set<std::string> feed_names;
  for (const auto& feed : flags.feeds) {
    const size_t eq = feed.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == feed.size()) {
      throw UsageError("--feed expects NAME=FILE.npy, got '" + feed + "'");
    }
    const std::string name = feed.substr(0, eq);
    if (!feed_names.insert(name).second) throw UsageError("variable " + name + " is fed twice");
    feed_files.emplace_back(name, feed.substr(eq + 1));
  }
  if (flags.out.empty()) throw UsageError("--out needs a directory");
  if (!flags.trace.empty() && flags.executor != "actor") {
    throw UsageError("--trace records the actor executor (--executor actor)");
  }
  const proto::ProgramDesc main = LoadProgram(flags.main);
  Executor executor;
  Scope scope;
  if (!flags.startup.empty()) {
    const proto::ProgramDesc startup = LoadProgram(flags.startup);
    InFile(flags.startup, [&] { return executor.Run(startup, &scope); });
  }
  if (!flags.checkpoint.empty()) LoadCheckpoint(main, &scope, flags.checkpoint);
  FeedList feeds;
  for (const auto& [name, path] : feed_files) feeds.emplace_back(name, ReadNpy(path));
  const std::vector<std::string>& fetches = flags.fetches;
  const std::vector<Tensor> results = InFile(flags.main, [&] {
    if (flags.executor == "sequential") return executor.Run(main, &scope, feeds, fetches);
    ExecutionStrategy strategy;
    strategy.num_threads = flags.threads;
    if (!flags.trace.empty()) strategy.trace = std::make_shared<TraceRecorder>();
    ParallelExecutor actors(main, &scope, {.strategy = strategy});
    std::vector<Tensor> out = actors.Run(feeds, fetches);
    if (strategy.trace) {
      strategy.trace->WriteFile(flags.trace);
      std::cerr << "trace: " << flags.trace << "\n";
    }
    return out;
  });

  std::error_code ec;
  std::filesystem::create_directories(flags.out, ec);
  if (ec) Fail(ErrorCode::kIo, flags.out, ": cannot create the output directory: ", ec.message());
  for (size_t i = 0; i < fetches.size(); ++i) {
    const std::string path = (std::filesystem::path(flags.out) / FileNameFor(fetches[i])).string();
    WriteNpy(path, results[i]);
    std::cout << fetches[i] << ": " << results[i].Describe() << " = " << FirstValues(results[i])
              << " -> " << path << "\n";
  }
  return kExitOk;
}

}  // namespace

Command AddRunCommand(CLI::App& rill) {
  auto flags = std::make_shared<RunFlags>();
  CLI::App* app = rill.add_subcommand("run", "run a program once, write fetched variables as .npy");
  app->add_option("MAIN", flags->main, "the program to run")->required();
  app->add_option("--startup", flags->startup, "program to run first, in the same scope")
      ->type_name("FILE");
  app->add_option("--checkpoint", flags->checkpoint,
                  "checkpoint (from rill train --save) to load before MAIN")
      ->type_name("FILE");
  app->add_option("--feed", flags->feeds, "value of variable NAME (repeatable)")
      ->type_name("NAME=FILE.npy")
      ->allow_extra_args(false)
      ->default_str("");
  app->add_option("--fetch", flags->fetches, "variable to fetch after the run (repeatable)")
      ->type_name("NAME")
      ->allow_extra_args(false)
      ->default_str("");
  app->add_option("--out", flags->out,
                  "where fetched .npy files go (created if missing; default: the current "
                  "directory)")
      ->type_name("DIR");
  app->add_option("--executor", flags->executor, "which executor runs MAIN")
      ->check(CLI::IsMember({"actor", "sequential"}));
  app->add_option("--threads", flags->threads,
                  "threads of the actor executor (0: the machine's cores)")
      ->type_name("N")
      ->check(AtLeast(0));
  app->add_option("--trace", flags->trace,
                  "record the actor executor's run as a Chrome trace\n"
                  "(Perfetto, `rill trace summarize|view`)")
      ->type_name("FILE");
  app->footer(
      "Runs the STARTUP program once (initialising parameters), restores the\n"
      "persistable variables of MAIN from a checkpoint if given, then runs MAIN\n"
      "once with the actor executor (or the sequential reference executor). Each\n"
      "fetched variable is written to DIR/NAME.npy (characters other than letters,\n"
      "digits and . _ @ - become _) and printed with its type, shape and first values.");
  return {app, [flags] { return Run(*flags); }};
}

}  // namespace rill::cli
