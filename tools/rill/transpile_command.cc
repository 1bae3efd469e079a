// rill transpile: splits a training program whose optimizer is a placeable
// block into a trainer program and parameter-server programs
// (runtime/transpile/include/rill/transpiler.h, actors/distributed/distributed.md), and writes them
// to a folder.
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "rill/error.h"
#include "rill/optimizer.h"
#include "rill/program_io.h"
#include "rill/transpiler.h"
#include "tools/rill/commands.h"
#include "tools/rill/flags.h"
#include "tools/rill/models.h"

namespace rill::cli {
namespace {

struct TranspileFlags {
  std::string file;
  std::string startup;
  std::string model;
  std::string optimizer = "adam";
  double lr = 1e-3;
  uint64_t seed = 0;
  std::string pservers;
  bool async = false;
  std::string out;
  TranspileOptions options;
};

int Split(const TranspileFlags& flags) {
  if (flags.file.empty() == flags.model.empty()) throw UsageError("give a program FILE or --model");
  if (!flags.file.empty() && flags.startup.empty()) throw UsageError("FILE needs --startup FILE");
  TranspileOptions options = flags.options;
  options.pservers = SplitCommas(flags.pservers);
  options.sync_mode = !flags.async;
  const std::string& out = flags.out;

  proto::ProgramDesc main, startup;
  if (flags.model.empty()) {
    main = LoadProgram(flags.file);
    startup = LoadProgram(flags.startup);
  } else {
    Program main_program, startup_program;
    Builder builder(&main_program, &startup_program, flags.seed);
    const Classifier classifier = BuildClassifier(builder, flags.model);
    MakeOptimizer(flags.optimizer, static_cast<float>(flags.lr))
        ->set_placeable(true)
        .Minimize(builder, classifier.loss);
    main = main_program.desc();
    startup = startup_program.desc();
  }
  const TranspileResult result = Transpile(main, startup, options);

  std::error_code error;
  std::filesystem::create_directories(out, error);
  RILL_CHECK(!error, kIo, "cannot create ", out, ": ", error.message());
  const std::filesystem::path dir(out);
  std::vector<std::pair<std::string, const proto::ProgramDesc*>> written = {
      {"trainer.main.pbtxt", &result.trainer_main},
      {"trainer.startup.pbtxt", &result.trainer_startup}};
  for (size_t i = 0; i < result.servers.size(); ++i) {
    written.emplace_back(StrCat("pserver", i, ".main.pbtxt"), &result.servers[i].main);
    written.emplace_back(StrCat("pserver", i, ".startup.pbtxt"), &result.servers[i].startup);
  }
  for (const auto& [name, program] : written) SaveProgram(*program, (dir / name).string());
  std::cout << result.Summary();
  std::cout << "wrote " << written.size() << " programs to " << out << "\n";
  return kExitOk;
}

}  // namespace

Command AddTranspileCommand(CLI::App& rill) {
  auto flags = std::make_shared<TranspileFlags>();
  CLI::App* app = rill.add_subcommand(
      "transpile", "split a program over parameter servers (writes their programs)");
  app->add_option("FILE", flags->file, "the main program to split (with --startup)")
      ->default_str("");
  app->add_option("--startup", flags->startup, "its startup program")->type_name("FILE");
  app->add_option("--model", flags->model,
                  "or build a Fashion-MNIST classifier (a model of rill train --model)\n"
                  "with its optimizer in a placeable block")
      ->type_name("NAME");
  app->add_option("--optimizer", flags->optimizer, "with --model: sgd, momentum, adam or adamw");
  app->add_option("--lr", flags->lr, "with --model: the learning rate")
      ->type_name("X")
      ->check(Positive());
  app->add_option("--seed", flags->seed, "with --model: the seed of the initialisers")
      ->type_name("N")
      ->check(NonNegative());
  app->add_option("--pservers", flags->pservers, "the servers' endpoints, comma-separated")
      ->type_name("HOST:PORT,...")
      ->required();
  app->add_option("--trainers", flags->options.trainers, "trainers that push to every server")
      ->type_name("N");
  app->add_flag("--async", flags->async, "servers apply each push as it arrives (default: sync)");
  app->add_option("--min-slice-rows", flags->options.min_slice_rows, "rows a slice keeps at least")
      ->type_name("N");
  app->add_option("--min-slice-elements", flags->options.min_slice_elements,
                  "elements a parameter needs to be sliced, and a slice keeps at least")
      ->type_name("N");
  app->add_option("--send-fuse-bytes", flags->options.send_fuse_bytes,
                  "the trainer's gradients for a server leave in buckets of up to\n"
                  "this many bytes, a send op each; 0: a send per gradient")
      ->type_name("BYTES")
      ->check(AtLeast(0));
  app->add_option("--out", flags->out, "where the programs go (created if missing)")
      ->type_name("DIR")
      ->required();
  app->footer(
      "Splits a program whose optimizer is a placeable block (one placeable_block\n"
      "op) over parameter servers: each parameter, or row slice of a large one,\n"
      "goes to one server, largest first to the least loaded. Writes\n"
      "DIR/trainer.main.pbtxt, DIR/trainer.startup.pbtxt and, per server i,\n"
      "DIR/pserver<i>.main.pbtxt and DIR/pserver<i>.startup.pbtxt, then prints\n"
      "where each parameter went.");
  return {app, [flags] { return Split(*flags); }};
}

}  // namespace rill::cli
