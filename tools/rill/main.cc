// The `rill` command-line tool: dispatches to the subcommands (print,
// validate, run, graph, train, bench, trace), and turns every failure into a
// message and an exit status (1: the program or data failed, 2: usage)
// instead of a crash.
#include <exception>
#include <iostream>
#include <new>
#include <string>
#include <vector>

#include "rill/error.h"
#include "rill/plugin.h"
#include "tools/rill/commands.h"

namespace rill::cli {
namespace {

constexpr const char* kUsage = R"(usage: rill [--plugin LIB.so ...] COMMAND [ARGS...]
  --plugin LIB.so            load the ops of a plugin (runtime/framework/include/rill/plugin.h) first
commands:
  print FILE                 show a program, one op per line
  validate FILE              check a program; prints "ok" or the first problem
  run MAIN [--startup FILE] --feed NAME=FILE.npy ... --fetch NAME ... [--out DIR]
                             run a program once, write fetched variables as .npy
  graph FILE [--places cpu:N] [--streams S] [--stats]
                             the SSA graph the actor executor runs, as DOT
  train [flags]              train a Fashion-MNIST classifier
  bench dag [flags]          executor cost per node: sequential, actor, oneTBB
  trace summarize FILE       busy lanes, messages, waits, top ops, critical path
  trace merge OUT IN...      merge trace files of several processes, clocks aligned
  trace view FILE            the trace as a self-contained HTML page
  transpile FILE --startup FILE | --model NAME  --pservers LIST --out DIR
                             split a program over parameter servers (writes their programs)
  pserver --program FILE     serve a parameter-server program (rill transpile writes it)
  launch --trainers N --pservers M [flags] [-- train flags]
                             a distributed job on this machine: servers and trainers
  help [COMMAND]             this message, or a command's flags
  --version                  the version of Rill
Exit status: 0 success, 1 the program or its data failed, 2 bad usage.
)";

using Command = int (*)(const std::vector<std::string>&);

struct Entry {
  const char* name;
  Command run;
};

// One command a line.
// clang-format off
constexpr Entry kCommands[] = {
    {"print", PrintCommand},
    {"validate", ValidateCommand},
    {"run", RunCommand},
    {"graph", GraphCommand},
    {"train", TrainCommand},
    {"bench", BenchCommand},
    {"trace", TraceCommand},
    {"pserver", PserverCommand},
    {"launch", LaunchCommand},
    {"transpile", TranspileCommand},
};
// clang-format on

Command FindCommand(const std::string& name) {
  for (const auto& entry : kCommands) {
    if (name == entry.name) return entry.run;
  }
  return nullptr;
}

int UnknownCommand(const std::string& name) {
  std::cerr << "rill: unknown command '" << name << "'\n\n" << kUsage;
  return kExitUsage;
}

// Loads the plugins named by leading --plugin PATH (or --plugin=PATH) flags
// and removes those flags. Returns false (having said why) when one fails.
bool LoadPlugins(std::vector<std::string>* args) {
  size_t i = 0;
  for (; i < args->size(); ++i) {
    std::string path;
    const std::string& arg = (*args)[i];
    if (arg == "--plugin" && i + 1 < args->size()) {
      path = (*args)[++i];
    } else if (arg.rfind("--plugin=", 0) == 0) {
      path = arg.substr(9);
    } else {
      break;
    }
    try {
      LoadPlugin(path);
    } catch (const Error& e) {
      std::cerr << "rill: " << e.what() << "\n";
      return false;
    }
  }
  args->erase(args->begin(), args->begin() + static_cast<std::ptrdiff_t>(i));
  return true;
}

int Dispatch(std::vector<std::string> args) {
  if (!LoadPlugins(&args)) return kExitFailure;
  if (args.empty()) {
    std::cerr << kUsage;
    return kExitUsage;
  }
  const std::string& name = args[0];
  if (name == "help" || name == "--help" || name == "-h") {
    if (args.size() == 1) {
      std::cout << kUsage;
      return kExitOk;
    }
    const Command command = FindCommand(args[1]);
    if (command == nullptr) return UnknownCommand(args[1]);
    return command({"--help"});
  }
  if (name == "--version" || name == "version") {
    std::cout << "rill " << Version() << "\n";
    return kExitOk;
  }
  const Command command = FindCommand(name);
  if (command == nullptr) return UnknownCommand(name);
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  try {
    return command(rest);
  } catch (const Error& e) {
    std::cerr << "rill " << name << ": " << e.what() << "\n";
  } catch (const std::bad_alloc&) {
    std::cerr << "rill " << name << ": out of memory\n";
  } catch (const std::exception& e) {
    std::cerr << "rill " << name << ": internal error: " << e.what() << "\n";
  } catch (...) {
    std::cerr << "rill " << name << ": internal error: unknown exception\n";
  }
  return kExitFailure;
}

}  // namespace
}  // namespace rill::cli

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return rill::cli::Dispatch(args);
}
