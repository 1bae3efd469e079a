// The subcommands of the `rill` command-line tool. Each takes its arguments
// without the leading "rill <command>" words and returns the process exit
// status: 0 on success, 1 when the program or its data fails (the
// rill::Error message is printed), 2 on a usage error (bad flag, missing
// argument; the usage is printed).
#pragma once

#include <string>
#include <vector>

namespace rill::cli {

// Exit statuses shared by every command.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

// rill print FILE [--text]: the program as a readable listing (or protobuf text).
int PrintCommand(const std::vector<std::string>& args);
// rill validate FILE: prints "ok", or the validation error and returns 1.
int ValidateCommand(const std::vector<std::string>& args);
// rill run MAIN [--startup FILE] [--checkpoint FILE] --feed NAME=FILE.npy ...
//          --fetch NAME ... [--out DIR]: runs a program once, writes the fetches as .npy.
int RunCommand(const std::vector<std::string>& args);
// rill graph FILE [--places P] [--streams S] [--stats]: the SSA graph as DOT, or its counts.
int GraphCommand(const std::vector<std::string>& args);
// rill bench dag ...: executor overhead per node against a sequential loop and oneTBB.
int BenchCommand(const std::vector<std::string>& args);
// rill train ...: trains a Fashion-MNIST classifier (tools/rill/train_command.cc).
int TrainCommand(const std::vector<std::string>& args);
// rill trace summarize|merge|view ...: reads trace files (tools/rill/trace_command.cc).
int TraceCommand(const std::vector<std::string>& args);
// rill pserver --program FILE ...: serves a parameter-server program (tools/rill/pserver_command.cc).
int PserverCommand(const std::vector<std::string>& args);
// rill launch --trainers N --pservers M ...: a distributed job on this machine (launch_command.cc).
int LaunchCommand(const std::vector<std::string>& args);
// rill transpile (FILE --startup FILE | --model NAME) --pservers LIST --out DIR ...: the
// trainer and parameter-server programs of a placeable program (transpile_command.cc).
int TranspileCommand(const std::vector<std::string>& args);

}  // namespace rill::cli
