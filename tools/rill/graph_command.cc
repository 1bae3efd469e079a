// rill graph: the SSA graph the actor executor runs a program as, in DOT.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "rill/program_io.h"
#include "rill/validate.h"
#include "runtime/graph/graph_dot.h"
#include "runtime/graph/ssa_graph.h"
#include "tools/rill/commands.h"
#include "tools/rill/flags.h"

namespace rill::cli {

Command AddGraphCommand(CLI::App& rill) {
  struct Flags {
    std::string file;
    std::string places = "cpu";
    int streams = 1;
    int block = 0;
    bool stats = false;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* app =
      rill.add_subcommand("graph", "the SSA graph the actor executor runs, as DOT (or its counts)");
  app->add_option("FILE", flags->file, "a program file")->required();
  app->add_option("--places", flags->places, "cpu, cpu:N (N replicas) or cuda:0,cuda:1,...")
      ->type_name("P");
  app->add_option("--streams", flags->streams, "streams per place")
      ->type_name("S")
      ->check(AtLeast(1));
  app->add_option("--block", flags->block, "the block whose graph is built")->type_name("B");
  app->add_flag("--stats", flags->stats, "print the node and edge counts instead");
  app->footer(
      "Builds the SSA graph of block B of a program file: one node per op and per\n"
      "variable version, control edges (dashed) for write-after-read and\n"
      "write-after-write hazards, one cluster per place, each op labelled with the\n"
      "stream it runs on. Prints Graphviz DOT (render: rill graph F | dot -Tsvg).");
  return {app, [flags] {
            const proto::ProgramDesc program = LoadProgram(flags->file);
            GraphOptions options;
            options.places = ParsePlaces(flags->places);
            options.streams_per_place = flags->streams;
            try {
              Validate(program);
              const SsaGraph graph = BuildSsaGraph(program, flags->block, options);
              if (flags->stats) {
                WriteStats(graph, std::cout);
              } else {
                WriteDot(graph, std::cout);
              }
            } catch (const Error& e) {
              throw Error(e.code(), flags->file + ": " + e.message());
            }
            return kExitOk;
          }};
}

}  // namespace rill::cli
