// The `rill` command-line tool: one CLI11 app whose subcommands are the
// commands (print, validate, run, graph, train, bench, trace, transpile,
// pserver, launch), each added by its own file. It turns every failure into
// a message and an exit status (1: the program or data failed, 2: usage)
// instead of a crash. A usage error is one line, "rill CMD: what is wrong",
// and a pointer to the command's --help.
#include <exception>
#include <iostream>
#include <new>
#include <string>
#include <vector>

#include "rill/error.h"
#include "rill/plugin.h"
#include "rill/version.h"
#include "tools/rill/commands.h"
#include "tools/rill/flags.h"

namespace rill::cli {
namespace {

constexpr const char* kDescription =
    "rill: runs PaddlePaddle-Fluid-style programs on actors, trains models, reads traces.";
constexpr const char* kFooter =
    "`rill help COMMAND` (or `rill COMMAND --help`) shows a command's flags.\n"
    "Exit status: 0 success, 1 the program or its data failed, 2 bad usage.";

// The subcommand the command line reached, and its name ("rill trace summarize").
CLI::App* Reached(CLI::App& rill, std::string* name) {
  CLI::App* app = &rill;
  *name = "rill";
  while (!app->get_subcommands().empty()) {
    app = app->get_subcommands().front();
    *name += " " + app->get_name();
  }
  return app;
}

int PrintUsageError(const std::string& name, const std::string& message,
                    const std::string& help_of) {
  std::cerr << name << ": " << message << "\nRun '" << help_of << " --help' for usage.\n";
  return kExitUsage;
}

// One line for what CLI11 refused, and where the help is.
int ReportParseError(CLI::App& rill, const CLI::ParseError& error) {
  std::string name;
  CLI::App* app = Reached(rill, &name);
  // A group of commands (rill, rill trace, rill bench) given a word that is none of them.
  const bool group = !app->get_subcommands([](const CLI::App*) { return true; }).empty();
  const std::vector<std::string> left = app->remaining();
  const bool flag = !left.empty() && left[0].rfind('-', 0) == 0;
  if (group && !left.empty() && !flag) {
    return PrintUsageError(name, "unknown command '" + left[0] + "'", name);
  }
  // CLI11 lists every argument left over, last first; the first one is the news.
  if (dynamic_cast<const CLI::ExtrasError*>(&error) != nullptr && !left.empty()) {
    const std::string what =
        flag ? "unknown flag " + left[0] : "unexpected argument '" + left[0] + "'";
    return PrintUsageError(name, what, name);
  }
  return PrintUsageError(name, error.what(), name);
}

// rill help [COMMAND [SUBCOMMAND]]: the help of rill or of the command named.
int Help(CLI::App& rill, const std::vector<std::string>& words) {
  CLI::App* app = &rill;
  std::string named;  // "trace summarize"
  for (const std::string& word : words) {
    named += (named.empty() ? "" : " ") + word;
    CLI::App* next = nullptr;
    try {
      next = app->get_subcommand(word);
    } catch (const CLI::OptionNotFound&) {
    }
    if (next == nullptr || next->get_group().empty()) {  // none, or hidden
      return PrintUsageError("rill help", "unknown command '" + named + "'", "rill");
    }
    app = next;
  }
  // Not App::help(): on rill, it would show the help of the subcommand parsed, `help`.
  std::cout << app->get_formatter()->make_help(app, named.empty() ? "rill" : "rill " + named,
                                               CLI::AppFormatMode::Normal);
  return kExitOk;
}

// Runs the command the line chose, turning what it throws into a message.
int Run(CLI::App& rill, const Command& command) {
  std::string name;
  Reached(rill, &name);
  try {
    return command.run();
  } catch (const UsageError& e) {
    return PrintUsageError(name, e.what(), name);
  } catch (const Error& e) {
    std::cerr << name << ": " << e.what() << "\n";
  } catch (const std::bad_alloc&) {
    std::cerr << name << ": out of memory\n";
  } catch (const std::exception& e) {
    std::cerr << name << ": internal error: " << e.what() << "\n";
  } catch (...) {
    std::cerr << name << ": internal error: unknown exception\n";
  }
  return kExitFailure;
}

int Main(int argc, char** argv) {
  CLI::App rill(kDescription, "rill");
  rill.option_defaults()->always_capture_default();
  rill.require_subcommand(0, 1);  // a command's arguments are never taken for a second command
  std::vector<std::string> plugins;
  rill.add_option("--plugin", plugins,
                  "load the ops of a plugin (runtime/framework/include/rill/plugin.h) first; "
                  "repeatable")
      ->type_name("LIB.so")
      ->allow_extra_args(false)
      ->default_str("");
  rill.set_version_flag("--version", std::string("rill ") + Version(), "the version of Rill");

  std::vector<Command> commands;
  for (auto add : {AddPrintCommand, AddValidateCommand, AddRunCommand, AddGraphCommand,
                   AddTrainCommand, AddBenchCommand, AddTraceCommand, AddTranspileCommand,
                   AddPserverCommand, AddLaunchCommand}) {
    commands.push_back(add(rill));
  }
  CLI::App* help = rill.add_subcommand("help", "this list, or a command's flags (help COMMAND)");
  std::vector<std::string> help_words;
  help->add_option("COMMAND", help_words, "a command, and a subcommand of it (help trace view)")
      ->default_str("");
  CLI::App* version = rill.add_subcommand("version", "the version of Rill")->group("");
  rill.footer(kFooter);  // after the subcommands: they would inherit it

  if (argc <= 1) {
    std::cerr << rill.help();
    return kExitUsage;
  }
  try {
    rill.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return rill.exit(e);  // --help, --version
    return ReportParseError(rill, e);
  }
  for (const std::string& path : plugins) {
    try {
      LoadPlugin(path);
    } catch (const Error& e) {
      std::cerr << "rill: " << e.what() << "\n";
      return kExitFailure;
    }
  }
  if (help->parsed()) return Help(rill, help_words);
  if (version->parsed()) {
    std::cout << "rill " << Version() << "\n";
    return kExitOk;
  }
  for (const Command& command : commands) {
    if (command.app->parsed()) return Run(rill, command);
  }
  return PrintUsageError("rill", "a command is required", "rill");
}

}  // namespace
}  // namespace rill::cli

int main(int argc, char** argv) { return rill::cli::Main(argc, argv); }
