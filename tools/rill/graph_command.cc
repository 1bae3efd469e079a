// rill graph: the SSA graph the actor executor runs a program as, in DOT.
#include <iostream>
#include <string>
#include <vector>

#include "rill/program_io.h"
#include "rill/validate.h"
#include "runtime/graph/graph_dot.h"
#include "runtime/graph/ssa_graph.h"
#include "tools/rill/commands.h"
#include "tools/rill/flags.h"

namespace rill::cli {
namespace {

constexpr const char* kUsage =
    R"(usage: rill graph FILE [--places cpu:N] [--streams S] [--block B] [--stats]
  Builds the SSA graph of block B (default 0) of a program file: one node per
  op and per variable version, control edges (dashed) for write-after-read and
  write-after-write hazards, one cluster per place, each op labelled with the
  stream it runs on. Prints Graphviz DOT (render: rill graph F | dot -Tsvg),
  or with --stats the node and edge counts.
  --places   cpu, cpu:N (N replicas) or cuda:0,cuda:1,...   (default cpu)
  --streams  streams per place (default 1)
)";

}  // namespace

int GraphCommand(const std::vector<std::string>& args) {
  std::vector<std::string> files;
  std::string places = "cpu";
  int streams = 1;
  int block = 0;
  bool stats = false;
  Flags flags("rill graph", kUsage);
  flags.Positional("FILE", &files, 1, 1);
  flags.String("--places", &places);
  flags.Int("--streams", &streams);
  flags.Int("--block", &block);
  flags.Bool("--stats", &stats);
  if (int rc = flags.Parse(args); rc >= 0) return rc;
  if (streams < 1) return flags.UsageError("--streams must be >= 1");
  const proto::ProgramDesc program = LoadProgram(files[0]);
  GraphOptions options;
  options.places = ParsePlaces(places);
  options.streams_per_place = streams;
  try {
    Validate(program);
    const SsaGraph graph = BuildSsaGraph(program, block, options);
    if (stats) {
      WriteStats(graph, std::cout);
    } else {
      WriteDot(graph, std::cout);
    }
  } catch (const Error& e) {
    throw Error(e.code(), files[0] + ": " + e.message());
  }
  return kExitOk;
}

}  // namespace rill::cli
