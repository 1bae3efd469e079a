// The subcommands of the `rill` command-line tool. main.cc builds one CLI11
// app (CLI::App) and asks each command to add its subcommand to it: the
// command's flags, bound to variables the command owns, and its help. Once
// CLI11 has parsed the command line, main calls the chosen command's run,
// which returns the process exit status: 0 on success, 1 when the program or
// its data fails (main prints the rill::Error message), 2 on a usage error
// (CLI11's, or a UsageError the command throws: one line and a pointer to
// --help).
#pragma once

#include <functional>

namespace CLI {
class App;
}  // namespace CLI

namespace rill::cli {

// Exit statuses shared by every command.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

// A command of `rill`: its CLI11 subcommand and what runs it once its flags
// are parsed.
struct Command {
  CLI::App* app;
  std::function<int()> run;
};

// Each adds its subcommand to `rill` and returns it with its run.
// rill print FILE [--text]: the program as a readable listing (or protobuf text).
Command AddPrintCommand(CLI::App& rill);
// rill validate FILE: prints "ok", or the validation error and returns 1.
Command AddValidateCommand(CLI::App& rill);
// rill run MAIN [--startup FILE] [--checkpoint FILE] --feed NAME=FILE.npy ...
//          --fetch NAME ... [--out DIR]: runs a program once, writes the fetches as .npy.
Command AddRunCommand(CLI::App& rill);
// rill graph FILE [--places P] [--streams S] [--stats]: the SSA graph as DOT, or its counts.
Command AddGraphCommand(CLI::App& rill);
// rill bench dag ...: executor overhead per node against a sequential loop and oneTBB.
Command AddBenchCommand(CLI::App& rill);
// rill train ...: trains a Fashion-MNIST classifier (tools/rill/train_command.cc).
Command AddTrainCommand(CLI::App& rill);
// rill trace summarize|merge|view ...: reads trace files (tools/rill/trace_command.cc).
Command AddTraceCommand(CLI::App& rill);
// rill pserver --program FILE ...: serves a parameter-server program
// (tools/rill/pserver_command.cc).
Command AddPserverCommand(CLI::App& rill);
// rill launch --trainers N --pservers M ...: a distributed job on this machine (launch_command.cc).
Command AddLaunchCommand(CLI::App& rill);
// rill transpile (FILE --startup FILE | --model NAME) --pservers LIST --out DIR ...: the
// trainer and parameter-server programs of a placeable program (transpile_command.cc).
Command AddTranspileCommand(CLI::App& rill);

}  // namespace rill::cli
