#include "rill/transpiler.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>

#include "rill/error.h"
#include "rill/op_desc.h"
#include "rill/validate.h"
#include "runtime/transpile/transpiler_plan.h"

namespace rill {
namespace {

// HOST:PORT, or [HOST]:PORT for an IPv6 address; PORT 0..65535.
void CheckEndpoint(const std::string& endpoint) {
  auto bad = [&](const char* why) {
    Fail(ErrorCode::kInvalidArgument, "pserver endpoint \"", endpoint, "\" ", why,
         " (expected HOST:PORT, e.g. 127.0.0.1:6170)");
  };
  const size_t colon = endpoint.rfind(':');
  if (colon == std::string::npos) bad("has no port");
  std::string host = endpoint.substr(0, colon);
  const std::string port = endpoint.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string::npos) {
    bad("has an IPv6 host without brackets");
  }
  if (host.empty()) bad("has no host");
  if (port.empty() || port.size() > 5 ||
      !std::all_of(port.begin(), port.end(), [](unsigned char c) { return std::isdigit(c); }) ||
      std::stol(port) > 65535) {
    bad("has no port number in 0..65535");
  }
}

void CheckOptions(const TranspileOptions& options) {
  RILL_CHECK(options.trainers >= 1, kInvalidArgument, "transpile needs at least one trainer, got ",
             options.trainers);
  RILL_CHECK(!options.pservers.empty(), kInvalidArgument,
             "transpile needs at least one pserver endpoint");
  std::set<std::string> seen;
  for (const auto& endpoint : options.pservers) {
    CheckEndpoint(endpoint);
    RILL_CHECK(seen.insert(endpoint).second, kInvalidArgument, "pserver endpoint ", endpoint,
               " is listed twice");
  }
  RILL_CHECK(options.min_slice_rows >= 1 && options.min_slice_elements >= 1, kInvalidArgument,
             "min_slice_rows and min_slice_elements must be at least 1, are ",
             options.min_slice_rows, " and ", options.min_slice_elements);
  RILL_CHECK(options.send_fuse_bytes >= 0, kInvalidArgument,
             "send_fuse_bytes must not be negative, is ", options.send_fuse_bytes);
}

// The one placeable_block op of the program: sets its block and index.
void FindPlaceableOp(const proto::ProgramDesc& main, TranspilePlan* plan) {
  int found = 0;
  std::string where;
  for (int b = 0; b < main.blocks_size(); ++b) {
    for (int i = 0; i < main.blocks(b).ops_size(); ++i) {
      if (main.blocks(b).ops(i).type() != "placeable_block") continue;
      const std::string here = StrCat("block ", b, ", op ", i);
      RILL_CHECK(found == 0, kInvalidArgument, "the program has more than one placeable block (",
                 where, " and ", here, "); the transpiler places one");
      ++found;
      where = here;
      plan->op_block = b;
      plan->op_index = i;
    }
  }
  RILL_CHECK(found == 1, kInvalidArgument,
             "the program has no placeable block to put on parameter servers; build the "
             "optimizer with set_placeable(true) (or use Builder::PlaceableBlock)");
}

int64_t Elements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// How many row slices `param` is cut into (1: not cut).
int SliceCount(const TranspilePlan& plan, const ParameterUpdate& update) {
  const proto::VarDesc* param = plan.Declaration(update.param);
  const proto::VarDesc* grad = plan.Declaration(update.grad);
  if (param == nullptr || param->shape_size() == 0 ||
      (grad != nullptr && grad->kind() == proto::SELECTED_ROWS)) {
    return 1;
  }
  const std::vector<int64_t> shape(param->shape().begin(), param->shape().end());
  if (std::any_of(shape.begin(), shape.end(), [](int64_t d) { return d <= 0; })) return 1;
  const TranspileOptions& o = plan.options;
  const int64_t count =
      std::min({static_cast<int64_t>(o.pservers.size()), shape[0] / o.min_slice_rows,
                Elements(shape) / o.min_slice_elements});
  return count >= 2 ? static_cast<int>(count) : 1;
}

// The units of one parameter: the whole of it, or `count` row slices.
void AddUnits(TranspilePlan* plan, const ParameterUpdate& update, int count) {
  const proto::VarDesc* param = plan->Declaration(update.param);
  const std::vector<int64_t> shape(param->shape().begin(), param->shape().end());
  if (count == 1) {
    PlacedUpdate unit;
    unit.update = &update;
    unit.placed = {update.param, update.param, update.grad, -1, 0, shape, Elements(shape), 0};
    plan->units.push_back(std::move(unit));
    return;
  }
  std::vector<int64_t> rows;
  for (int k = 0; k < count; ++k) rows.push_back(shape[0] / count + (k < shape[0] % count));
  // What the update ops touch: variables of the parameter's shape are cut
  // by rows; other variables they write get a copy per slice; what they
  // only read keeps its name.
  std::set<std::string> touched, written;
  for (int j : update.ops) {
    const BlockAccess access = OpAccess(*plan->main, plan->main->blocks(plan->block()).ops(j));
    touched.insert(access.reads.begin(), access.reads.end());
    touched.insert(access.writes.begin(), access.writes.end());
    written.insert(access.writes.begin(), access.writes.end());
  }
  std::set<std::string> cut;
  for (const auto& name : touched) {
    const proto::VarDesc* var = plan->Declaration(name);
    if (var != nullptr && std::vector<int64_t>(var->shape().begin(), var->shape().end()) == shape) {
      cut.insert(name);
      plan->sections[name] = rows;
    }
  }
  int64_t begin = 0;
  for (int k = 0; k < count; ++k) {
    PlacedUpdate unit;
    unit.update = &update;
    std::vector<int64_t> slice_shape = shape;
    slice_shape[0] = rows[k];
    for (const auto& name : touched) {
      if (cut.count(name)) {
        unit.renames[name] = SliceName(name, k);
        unit.slice_shapes[SliceName(name, k)] = slice_shape;
      } else if (written.count(name)) {
        unit.renames[name] = SliceName(name, k);
      }
    }
    unit.placed = {update.param,
                   SliceName(update.param, k),
                   SliceName(update.grad, k),
                   k,
                   begin,
                   slice_shape,
                   Elements(slice_shape),
                   0};
    begin += rows[k];
    plan->units.push_back(std::move(unit));
  }
}

// Largest first, each to the least loaded server (by elements).
void Balance(TranspilePlan* plan) {
  std::vector<size_t> order(plan->units.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return plan->units[a].placed.elements > plan->units[b].placed.elements;
  });
  std::vector<int64_t> load(plan->options.pservers.size(), 0);
  for (size_t i : order) {
    const int server = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
    plan->units[i].placed.server = server;
    load[server] += plan->units[i].placed.elements;
  }
}

}  // namespace

std::string SliceName(const std::string& var, int slice) { return StrCat(var, ".slice", slice); }

const proto::VarDesc* TranspilePlan::Declaration(const std::string& name) const {
  return FindVarDesc(*main, block(), name);
}

TranspileResult Transpile(const proto::ProgramDesc& main, const proto::ProgramDesc& startup,
                          const TranspileOptions& options) {
  CheckOptions(options);
  Validate(main);
  TranspilePlan plan;
  plan.main = &main;
  plan.startup = &startup;
  plan.options = options;
  FindPlaceableOp(main, &plan);
  const proto::OpDesc& op = main.blocks(plan.op_block).ops(plan.op_index);
  plan.analysis = AnalyzePlaceableBlock(main, BlockAttr(op, "sub_block"));
  for (const ParameterUpdate& update : plan.analysis.updates) {
    AddUnits(&plan, update, SliceCount(plan, update));
  }
  Balance(&plan);

  TranspileResult result;
  result.trainer_main = BuildTrainerMain(plan);
  result.trainer_startup = startup;
  for (int s = 0; s < static_cast<int>(options.pservers.size()); ++s) {
    result.servers.push_back(BuildServer(plan, s));
  }
  for (const PlacedUpdate& unit : plan.units) result.placements.push_back(unit.placed);
  Validate(result.trainer_main);
  for (const ServerProgram& server : result.servers) {
    Validate(server.main);
    Validate(server.startup);
  }
  return result;
}

std::string TranspileResult::Summary() const {
  std::ostringstream out;
  auto shape_text = [](const std::vector<int64_t>& shape) {
    std::string text = "[";
    for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
    return text + "]";
  };
  for (const PlacedParameter& p : placements) {
    out << p.var << " " << shape_text(p.shape) << " " << p.elements << " elements";
    if (p.slice >= 0) {
      out << " (rows " << p.row_begin << ".." << p.row_begin + p.shape[0] << " of " << p.param
          << ")";
    }
    out << " -> pserver " << p.server << " " << servers[p.server].endpoint << "\n";
  }
  for (size_t s = 0; s < servers.size(); ++s) {
    int count = 0;
    for (const PlacedParameter& p : placements) count += p.server == static_cast<int>(s);
    out << "pserver " << s << " " << servers[s].endpoint << ": " << count << " variables, "
        << servers[s].elements << " elements\n";
  }
  return out.str();
}

}  // namespace rill
