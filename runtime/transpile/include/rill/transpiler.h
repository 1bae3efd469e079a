// The distribute transpiler: splits a training program whose optimizer is a
// placeable block (Optimizer::set_placeable) into a trainer program and one
// program per parameter server, as actors/distributed/distributed.md specifies.
//
//   TranspileOptions options;
//   options.trainers = 2;
//   options.pservers = {"10.0.0.1:6170", "10.0.0.2:6170"};
//   TranspileResult r = Transpile(main.desc(), startup.desc(), options);
//   // r.trainer_main: forward + backward, then split/send/recv/concat
//   // r.servers[i].main: one listen_and_serv op over the blocks server i runs
//   std::cout << r.Summary();
//
// Which op goes where follows from the reads and writes of the block's ops
// (runtime/transpile/block_dependencies.h); no op type is special. Pure: no I/O.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rill/proto/program.pb.h"

namespace rill {

struct TranspileOptions {
  int trainers = 1;
  // One endpoint (HOST:PORT) per parameter server.
  std::vector<std::string> pservers;
  // Sync: a server updates once every trainer's gradient arrived (mean).
  bool sync_mode = true;
  // A parameter with at least 2 * min_slice_rows rows and min_slice_elements
  // elements is cut by rows into one slice per server (at most), each slice
  // keeping min_slice_rows rows and min_slice_elements elements.
  int64_t min_slice_rows = 8;
  int64_t min_slice_elements = 8192;
  // A trainer's gradients for one server leave in buckets of up to this many
  // bytes, one send op (and one frame) each, a bucket's gradients consecutive in
  // update order; a larger gradient goes alone. 0: a send per gradient.
  int64_t send_fuse_bytes = 256 * 1024;
};

// Where one parameter, or one row slice of it, went.
struct PlacedParameter {
  std::string param;  // the parameter of the original program
  std::string var;    // its name on the wire: param, or param.slice<k>
  std::string grad;   // the gradient (or slice) the server receives
  int slice = -1;     // -1: the whole parameter
  int64_t row_begin = 0;
  std::vector<int64_t> shape;  // of the parameter or the slice
  int64_t elements = 0;
  int server = 0;
};

struct ServerProgram {
  std::string endpoint;
  proto::ProgramDesc main;     // declarations and one listen_and_serv op
  proto::ProgramDesc startup;  // initialisers at full size, then the slices
  int64_t elements = 0;        // parameter elements it holds
};

struct TranspileResult {
  proto::ProgramDesc trainer_main;
  proto::ProgramDesc trainer_startup;
  std::vector<ServerProgram> servers;  // one per endpoint, in order
  // In the order of the parameters' updates, slices in row order.
  std::vector<PlacedParameter> placements;

  // One line per parameter or slice (shape, elements, server), then each
  // server's total, for `rill transpile`.
  std::string Summary() const;
};

// Splits `main` (validated, holding exactly one placeable_block op) and its
// `startup`. Throws rill::Error(kInvalidArgument) naming the cause: no or
// several placeable blocks, an op the block cannot be split around (one
// combining two parameters' gradients), no pservers, trainers < 1, a
// malformed endpoint.
TranspileResult Transpile(const proto::ProgramDesc& main, const proto::ProgramDesc& startup,
                          const TranspileOptions& options);

}  // namespace rill
