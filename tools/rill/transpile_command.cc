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

constexpr const char* kUsage =
    R"(usage: rill transpile (FILE --startup FILE | --model NAME) --pservers HOST:PORT,...
                      [--trainers N] [--async] --out DIR
  Splits a program whose optimizer is a placeable block (one placeable_block
  op) over parameter servers: each parameter, or row slice of a large one,
  goes to one server, largest first to the least loaded. Writes
  DIR/trainer.main.pbtxt, DIR/trainer.startup.pbtxt and, per server i,
  DIR/pserver<i>.main.pbtxt and DIR/pserver<i>.startup.pbtxt, then prints
  where each parameter went.
  FILE, --startup FILE     the main and startup programs to split
  --model mlp|cnn|linreg   or build a Fashion-MNIST classifier (as rill train
                           does) with its optimizer in a placeable block:
    --optimizer sgd|momentum|adam   (default adam)
    --lr X                 learning rate (default 1e-3)
    --seed N               seed of the initialisers (default 0)
  --pservers LIST          the servers' endpoints, comma-separated
  --trainers N             trainers that push to every server (default 1)
  --async                  servers apply each push as it arrives (default: sync)
  --min-slice-rows N       rows a slice keeps at least (default 8)
  --min-slice-elements N   elements a parameter needs to be sliced, and a slice
                           keeps at least (default 8192)
  --out DIR                where the programs go (created if missing)
)";

}  // namespace

int TranspileCommand(const std::vector<std::string>& args) {
  std::vector<std::string> files;
  std::string startup_file, model, optimizer = "adam", pservers, out;
  double lr = 1e-3;
  uint64_t seed = 0;
  bool async = false;
  TranspileOptions options;
  Flags flags("rill transpile", kUsage);
  flags.Positional("FILE", &files, 0, 1);
  flags.String("--startup", &startup_file);
  flags.String("--model", &model);
  flags.String("--optimizer", &optimizer);
  flags.Double("--lr", &lr);
  flags.Uint64("--seed", &seed);
  flags.String("--pservers", &pservers);
  flags.Int("--trainers", &options.trainers);
  flags.Bool("--async", &async);
  flags.Int64("--min-slice-rows", &options.min_slice_rows);
  flags.Int64("--min-slice-elements", &options.min_slice_elements);
  flags.String("--out", &out);
  if (int rc = flags.Parse(args); rc >= 0) return rc;
  if (files.empty() == model.empty()) return flags.UsageError("give a program FILE or --model");
  if (!files.empty() && startup_file.empty()) return flags.UsageError("FILE needs --startup FILE");
  if (pservers.empty()) return flags.UsageError("--pservers is required");
  if (out.empty()) return flags.UsageError("--out is required");
  if (lr <= 0) return flags.UsageError("--lr must be > 0");
  options.pservers = SplitCommas(pservers);
  options.sync_mode = !async;

  proto::ProgramDesc main, startup;
  if (model.empty()) {
    main = LoadProgram(files[0]);
    startup = LoadProgram(startup_file);
  } else {
    Program main_program, startup_program;
    Builder builder(&main_program, &startup_program, seed);
    const Classifier classifier = BuildClassifier(builder, model);
    MakeOptimizer(optimizer, static_cast<float>(lr))
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

}  // namespace rill::cli
