// The distribute transpiler on the Fashion-MNIST MLP with Adam: where the
// parameters and slices go, what the trainer and server programs hold, that a
// learning-rate decay moves to every server's prepare block, the errors; and
// the numbers: the parameter servers simulated in process with the
// sequential Executor (two trainers on half batches each, gradients averaged)
// train to what one process computes on the whole batch.
#include "rill/transpiler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "rill/builder.h"
#include "rill/executor.h"
#include "rill/op_desc.h"
#include "rill/optimizer.h"
#include "rill/validate.h"
#include "tests/testing/gradient_check.h"

namespace rill {
namespace {

using ::testing::HasSubstr;
using testing::RandomTensor;

const std::vector<std::string> kServers = {"127.0.0.1:6170", "127.0.0.1:6171"};

struct Mlp {
  Program main, startup;
  std::string loss;
};

// The 784-256-128-10 MLP, Adam in a placeable block; with `decay`, a step
// counter and a learning rate lr / (1 + step / 2) computed in the block.
void BuildMlp(Mlp* m, bool decay = false, bool placeable = true,
              DataType dtype = DataType::kFloat32) {
  Builder b(&m->main, &m->startup, 7);
  Var image = b.Data("image", {-1, 784}, dtype);
  Var label = b.Data("label", {-1, 1}, DataType::kInt64);
  Var h = b.Fc(b.Fc(image, 256, Activation::kRelu), 128, Activation::kRelu);
  Var loss = b.Mean(b.SoftmaxWithCrossEntropy(b.Fc(h, 10), label));
  Adam adam(0.01f);
  adam.set_placeable(placeable);
  if (decay) {
    adam.set_learning_rate_schedule([](Builder& b, const Var& lr) {
      Var step = b.Persistable("step", {1}, 0);
      b.AppendOpTo("scale", {{"X", {step}}}, {{"Out", {step}}},
                   [](proto::OpDesc* op) { SetAttr(op, "bias", 1.0f); });
      return b.Div(lr, b.Scale(step, 0.5f, 1.0f));
    });
  }
  adam.Minimize(b, loss);
  m->loss = loss.name;
}

TranspileOptions TwoServers() {
  TranspileOptions options;
  options.trainers = 2;
  options.pservers = kServers;
  return options;
}

const proto::OpDesc& ServeOp(const ServerProgram& server) {
  EXPECT_EQ(server.main.blocks(0).ops_size(), 1);
  return server.main.blocks(0).ops(0);
}

std::vector<std::string> Strings(const proto::OpDesc& op, const std::string& name) {
  return AttrValue<std::vector<std::string>>(*FindAttr(op, name));
}

std::vector<int64_t> DeclaredShape(const proto::ProgramDesc& program, const std::string& name) {
  const proto::VarDesc* var = FindVarDesc(program, 0, name);
  EXPECT_NE(var, nullptr) << name;
  return var == nullptr ? std::vector<int64_t>{} : VarShape(*var);
}

int64_t ElementsOf(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::map<std::string, int> OpCounts(const proto::BlockDesc& block) {
  std::map<std::string, int> counts;
  for (const auto& op : block.ops()) ++counts[op.type()];
  return counts;
}

TEST(TranspilerTest, ServersHoldExactlyTheParametersWithTheLargeWeightSliced) {
  Mlp m;
  BuildMlp(&m);
  const TranspileResult r = Transpile(m.main.desc(), m.startup.desc(), TwoServers());
  ASSERT_EQ(r.servers.size(), 2u);

  // Served parameters: both big weights cut in two, the rest whole.
  std::map<std::string, int> where;
  std::vector<int64_t> load(2, 0);
  for (int s = 0; s < 2; ++s) {
    const proto::OpDesc& serve = ServeOp(r.servers[s]);
    EXPECT_EQ(serve.type(), "listen_and_serv");
    EXPECT_EQ(AttrValue<std::string>(*FindAttr(serve, "endpoint")), kServers[s]);
    EXPECT_EQ(AttrValue<int64_t>(*FindAttr(serve, "trainers")), 2);
    EXPECT_EQ(AttrValue<int64_t>(*FindAttr(serve, "server_index")), s);
    EXPECT_TRUE(AttrValue<bool>(*FindAttr(serve, "sync_mode")));
    EXPECT_EQ(FindAttr(serve, "prepare_block"), nullptr);  // nothing gradient-free to prepare
    const auto params = Strings(serve, "params");
    const auto grads = Strings(serve, "grads");
    const auto blocks = BlockAttrs(serve, "optimize_blocks");
    ASSERT_EQ(params.size(), blocks.size());
    ASSERT_EQ(grads.size(), blocks.size());
    for (size_t i = 0; i < params.size(); ++i) {
      where[params[i]] = s;
      EXPECT_EQ(grads[i], params[i].substr(0, params[i].find(".slice")) + "@GRAD" +
                              (params[i].find(".slice") == std::string::npos
                                   ? ""
                                   : params[i].substr(params[i].find(".slice"))));
      // One adam op per optimize block, on the block's parameter.
      const proto::BlockDesc& block = r.servers[s].main.blocks(blocks[i]);
      EXPECT_EQ(block.placement().role(), proto::Placement::ROLE_PSERVER);
      EXPECT_EQ(block.placement().index(), s);
      ASSERT_EQ(block.ops_size(), 1);
      EXPECT_EQ(block.ops(0).type(), "adam");
      EXPECT_EQ(InputVar(block.ops(0), "Param"), params[i]);
      EXPECT_EQ(InputVar(block.ops(0), "Grad"), grads[i]);
      const auto shape = DeclaredShape(r.servers[s].main, params[i]);
      int64_t n = 1;
      for (int64_t d : shape) n *= d;
      load[s] += n;
    }
    EXPECT_EQ(load[s], r.servers[s].elements);
  }
  const std::map<std::string, int> served = where;
  std::set<std::string> names;
  for (const auto& [name, server] : served) names.insert(name);
  EXPECT_EQ(names,
            (std::set<std::string>{"fc_0.w.slice0", "fc_0.w.slice1", "fc_0.b", "fc_1.w.slice0",
                                   "fc_1.w.slice1", "fc_1.b", "fc_2.w", "fc_2.b"}));
  EXPECT_NE(served.at("fc_0.w.slice0"), served.at("fc_0.w.slice1"));
  EXPECT_NE(served.at("fc_1.w.slice0"), served.at("fc_1.w.slice1"));
  // Balanced: the loads differ by less than the largest whole parameter.
  EXPECT_LE(std::abs(load[0] - load[1]), 128 * 10);

  // Slices have their rows; the server holds slices of the Adam moments and
  // copies of the beta powers, and never the whole weight.
  const int s0 = served.at("fc_0.w.slice0");
  const proto::ProgramDesc& server = r.servers[s0].main;
  EXPECT_EQ(DeclaredShape(server, "fc_0.w.slice0"), (std::vector<int64_t>{392, 256}));
  EXPECT_EQ(DeclaredShape(server, "fc_0.w@GRAD.slice0"), (std::vector<int64_t>{392, 256}));
  EXPECT_EQ(DeclaredShape(server, "fc_0.w.moment1.slice0"), (std::vector<int64_t>{392, 256}));
  EXPECT_EQ(DeclaredShape(server, "fc_0.w.beta1_pow.slice0"), (std::vector<int64_t>{1}));
  EXPECT_EQ(FindVarDesc(server, 0, "fc_0.w"), nullptr);
  EXPECT_EQ(FindVarDesc(server, 0, "fc_0.w.beta1_pow"), nullptr);

  // The summary names every placement.
  const std::string summary = r.Summary();
  EXPECT_THAT(summary, HasSubstr("fc_0.w.slice1 [392, 256] 100352 elements (rows 392..784 of "
                                 "fc_0.w)"));
  EXPECT_THAT(summary, HasSubstr("fc_2.b [10] 10 elements"));
}

TEST(TranspilerTest, TrainerSendsGradientsAndReceivesParameters) {
  Mlp m;
  BuildMlp(&m);
  TranspileOptions options = TwoServers();
  options.send_fuse_bytes = 0;  // a send per gradient
  const TranspileResult r = Transpile(m.main.desc(), m.startup.desc(), options);
  ASSERT_EQ(r.trainer_main.blocks_size(), 1);  // the placeable block is gone
  auto counts = OpCounts(r.trainer_main.blocks(0));
  EXPECT_EQ(counts["split"], 2);
  EXPECT_EQ(counts["send"], 8);
  EXPECT_EQ(counts["recv"], 8);
  EXPECT_EQ(counts["concat"], 2);
  EXPECT_EQ(counts["adam"], 0);
  EXPECT_EQ(counts["placeable_block"], 0);
  // In order: backward, then the splits, sends, recvs and concats.
  std::vector<std::string> tail;
  for (const auto& op : r.trainer_main.blocks(0).ops()) {
    if (op.role() == proto::ROLE_OPTIMIZE) tail.push_back(op.type());
  }
  ASSERT_EQ(tail.size(), 20u);
  EXPECT_EQ(tail.front(), "split");
  EXPECT_EQ(tail[2], "send");
  EXPECT_EQ(tail[10], "recv");
  EXPECT_EQ(tail.back(), "concat");
  for (const auto& op : r.trainer_main.blocks(0).ops()) {
    if (op.type() == "split" && InputVar(op, "X") == "fc_0.w@GRAD") {
      EXPECT_EQ(OutputVars(op, "Out"),
                (std::vector<std::string>{"fc_0.w@GRAD.slice0", "fc_0.w@GRAD.slice1"}));
      EXPECT_EQ(AttrValue<std::vector<int64_t>>(*FindAttr(op, "sections")),
                (std::vector<int64_t>{392, 392}));
    }
    if (op.type() == "send" || op.type() == "recv") {
      const std::string var = op.type() == "send" ? InputVar(op, "X") : OutputVar(op, "Out");
      const std::string endpoint = AttrValue<std::string>(*FindAttr(op, "endpoint"));
      // The server at that endpoint serves (or receives) that name.
      const auto& server = r.servers[endpoint == kServers[0] ? 0 : 1];
      const auto names = Strings(ServeOp(server), op.type() == "send" ? "grads" : "params");
      EXPECT_NE(std::find(names.begin(), names.end(), var), names.end()) << var;
    }
  }
  // The trainer's startup is the original one.
  EXPECT_EQ(r.trainer_startup.SerializeAsString(), m.startup.desc().SerializeAsString());
  Validate(r.trainer_main);
  for (const auto& server : r.servers) {
    Validate(server.main);
    Validate(server.startup);
  }
}

// By default a send op pushes a bucket: gradients for one server, consecutive
// in update order, up to send_fuse_bytes (a larger one alone); every gradient
// in exactly one send, to the server that receives it.
TEST(TranspilerTest, SendsPushBucketsOfGradientsForOneServer) {
  Mlp m;
  BuildMlp(&m);
  for (int64_t fuse : {int64_t{256 * 1024}, int64_t{1024}, int64_t{1} << 30}) {
    SCOPED_TRACE(fuse);
    TranspileOptions options = TwoServers();
    options.send_fuse_bytes = fuse;
    const TranspileResult r = Transpile(m.main.desc(), m.startup.desc(), options);
    std::multiset<std::string> sent;
    int sends = 0;
    for (const auto& op : r.trainer_main.blocks(0).ops()) {
      if (op.type() != "send") continue;
      ++sends;
      const std::string endpoint = AttrValue<std::string>(*FindAttr(op, "endpoint"));
      const auto& server = r.servers[endpoint == kServers[0] ? 0 : 1];
      const auto grads = Strings(ServeOp(server), "grads");
      const std::vector<std::string> bucket = InputVars(op, "X");
      int64_t bytes = 0;
      for (const std::string& grad : bucket) {
        EXPECT_NE(std::find(grads.begin(), grads.end(), grad), grads.end()) << grad;
        bytes += 4 * ElementsOf(DeclaredShape(r.trainer_main, grad));
        sent.insert(grad);
      }
      if (bucket.size() > 1) {
        EXPECT_LE(bytes, fuse) << bucket.front();
      }
    }
    EXPECT_EQ(sent.size(), 8u);
    EXPECT_EQ(std::set<std::string>(sent.begin(), sent.end()).size(), 8u);
    // One bucket per server when everything fits; two more when 1 KiB must
    // leave the weights (each over it) alone; some in between by default.
    const int expected_at_least = fuse == 1024 ? 6 : 2;
    const int expected_at_most = fuse == int64_t{1} << 30 ? 2 : 7;
    EXPECT_GE(sends, expected_at_least);
    EXPECT_LE(sends, expected_at_most);
  }
  TranspileOptions negative = TwoServers();
  negative.send_fuse_bytes = -1;
  EXPECT_THROW(Transpile(m.main.desc(), m.startup.desc(), negative), Error);
}

TEST(TranspilerTest, ServerStartupInitialisesAtFullSizeThenSlices) {
  Mlp m;
  BuildMlp(&m);
  const TranspileResult r = Transpile(m.main.desc(), m.startup.desc(), TwoServers());
  Scope trainer;
  Executor().Run(r.trainer_startup, &trainer);
  for (const auto& placed : r.placements) {
    Scope server;
    Executor().Run(r.servers[placed.server].startup, &server);
    const Tensor& full = trainer.GetTensor(placed.param);
    const Tensor& part = server.GetTensor(placed.var);
    ASSERT_EQ(part.shape(), placed.shape) << placed.var;
    const int64_t row = placed.elements / placed.shape[0];
    for (int64_t i = 0; i < part.numel(); ++i) {
      ASSERT_EQ(part.GetAsDouble(i), full.GetAsDouble(placed.row_begin * row + i)) << placed.var;
    }
  }
}

TEST(TranspilerTest, LearningRateDecayMovesToEveryServersPrepareBlock) {
  Mlp m;
  BuildMlp(&m, /*decay=*/true);
  const TranspileResult r = Transpile(m.main.desc(), m.startup.desc(), TwoServers());
  for (int s = 0; s < 2; ++s) {
    const proto::OpDesc& serve = ServeOp(r.servers[s]);
    ASSERT_NE(FindAttr(serve, "prepare_block"), nullptr);
    const proto::BlockDesc& prepare = r.servers[s].main.blocks(BlockAttr(serve, "prepare_block"));
    const auto counts = OpCounts(prepare);
    EXPECT_EQ(counts, (std::map<std::string, int>{{"scale", 2}, {"elementwise_div", 1}}));
    EXPECT_EQ(OutputVar(prepare.ops(0), "Out"), "step");
    const std::string rate = OutputVar(prepare.ops(2), "Out");
    // Every update reads the decayed rate, under its own name.
    for (int b : BlockAttrs(serve, "optimize_blocks")) {
      EXPECT_EQ(InputVar(r.servers[s].main.blocks(b).ops(0), "LearningRate"), rate);
    }
    EXPECT_NE(FindVarDesc(r.servers[s].main, 0, "step"), nullptr);
  }
  // The trainer keeps none of it.
  for (const auto& op : r.trainer_main.blocks(0).ops()) {
    for (const auto& slot : op.outputs()) {
      for (const auto& name : slot.vars()) EXPECT_NE(name, "step");
    }
  }
}

TEST(TranspilerTest, ReferenceExecutorRefusesProtocolOpsByName) {
  Mlp m;
  BuildMlp(&m);
  const TranspileResult r = Transpile(m.main.desc(), m.startup.desc(), TwoServers());
  Scope scope;
  try {
    Executor().Prepare(r.trainer_main, &scope);
    FAIL() << "the trainer program ran";
  } catch (const Error& e) {
    EXPECT_THAT(e.message(), HasSubstr("(send): no kernel for place cpu"));
    EXPECT_THAT(e.message(), HasSubstr("actor executor"));
  }
  try {
    Executor().Prepare(r.servers[0].main, &scope);
    FAIL() << "the server program ran";
  } catch (const Error& e) {
    EXPECT_THAT(e.message(), HasSubstr("op 0 (listen_and_serv): no kernel"));
  }
}

// Transpile's error message, or "" when it succeeds.
std::string TranspileError(const proto::ProgramDesc& main, const proto::ProgramDesc& startup,
                           const TranspileOptions& options) {
  try {
    Transpile(main, startup, options);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    return e.message();
  }
  return "";
}

TEST(TranspilerTest, RefusesWhatItCannotSplit) {
  {
    Mlp m;
    BuildMlp(&m, false, /*placeable=*/false);
    EXPECT_THAT(TranspileError(m.main.desc(), m.startup.desc(), TwoServers()),
                HasSubstr("no placeable block"));
  }
  // Two parameters' gradients combined inside the block.
  auto combined = [](bool two_blocks, Mlp* m) {
    Builder b(&m->main, &m->startup, 1);
    Var x = b.Data("x", {-1, 4});
    Var loss = b.Mean(b.Fc(x, 1));
    std::vector<ParamGrad> pairs = AppendBackward(&b.main(), loss.name);
    b.set_role(proto::ROLE_OPTIMIZE);
    Var lr = b.Persistable("lr", {1}, 0.1f);
    Var w = b.Lookup("fc_0.w"), bias = b.Lookup("fc_0.b");
    Var gw = b.Lookup("fc_0.w@GRAD"), gb = b.Lookup("fc_0.b@GRAD");
    auto sgd = [&](Builder& b, const Var& p, const Var& g) {
      b.AppendOpTo("sgd", {{"Param", {p}}, {"Grad", {g}}, {"LearningRate", {lr}}},
                   {{"ParamOut", {p}}});
    };
    if (two_blocks) {
      b.PlaceableBlock({gw, lr}, {w}, [&](Builder& b) { sgd(b, w, gw); });
      b.PlaceableBlock({gb, lr}, {bias}, [&](Builder& b) { sgd(b, bias, gb); });
      return;
    }
    b.PlaceableBlock({gw, gb, lr}, {w, bias}, [&](Builder& b) {
      // Both gradients' squared norms summed: one op reads both.
      Var nw = b.AppendOp("squared_l2_norm", {{"X", {gw}}}, {{"Out", 1}})[0];
      Var nb = b.AppendOp("squared_l2_norm", {{"X", {gb}}}, {{"Out", 1}})[0];
      Var total = b.Sum({nw, nb});
      sgd(b, w, gw);
      sgd(b, bias, b.Mul(gb, total, 0));
    });
  };
  {
    Mlp m;
    combined(false, &m);
    const std::string error = TranspileError(m.main.desc(), m.startup.desc(), TwoServers());
    EXPECT_THAT(error, HasSubstr("op 2 (sum) combines the gradients fc_0.b@GRAD and fc_0.w@GRAD"));
  }
  {
    Mlp m;
    combined(true, &m);
    EXPECT_THAT(TranspileError(m.main.desc(), m.startup.desc(), TwoServers()),
                HasSubstr("more than one placeable block"));
  }
  Mlp m;
  BuildMlp(&m);
  TranspileOptions options = TwoServers();
  options.pservers.clear();
  EXPECT_THAT(TranspileError(m.main.desc(), m.startup.desc(), options),
              HasSubstr("at least one pserver"));
  options = TwoServers();
  options.trainers = 0;
  EXPECT_THAT(TranspileError(m.main.desc(), m.startup.desc(), options),
              HasSubstr("at least one trainer, got 0"));
  for (const char* bad : {"localhost", "host:99999", ":6170", "host:port", "::1:80"}) {
    options = TwoServers();
    options.pservers[1] = bad;
    EXPECT_THAT(TranspileError(m.main.desc(), m.startup.desc(), options),
                HasSubstr(StrCat("pserver endpoint \"", bad, "\"")));
  }
  options = TwoServers();
  options.pservers[1] = options.pservers[0];
  EXPECT_THAT(TranspileError(m.main.desc(), m.startup.desc(), options), HasSubstr("twice"));
}

// ---------------------------------------------------------------- numerics

FeedList Batch(int step, int64_t begin, int64_t rows, DataType dtype = DataType::kFloat32) {
  const Tensor x = RandomTensor({8, 784}, 100 + step, 0, 1, dtype);
  const Tensor image = x.Slice(begin, begin + rows).Clone();
  Tensor label(DataType::kInt64, {rows, 1});
  for (int64_t i = 0; i < rows; ++i) label.mutable_data<int64_t>()[i] = (begin + i + step) % 10;
  return {{"image", image}, {"label", label}};
}

// Block 0 of `program` with only its ops [begin, end).
proto::ProgramDesc OpsRange(const proto::ProgramDesc& program, int begin, int end) {
  proto::ProgramDesc part = program;
  auto* ops = part.mutable_blocks(0)->mutable_ops();
  ops->DeleteSubrange(end, ops->size() - end);
  ops->DeleteSubrange(0, begin);
  return part;
}

double RelativeDiff(const Tensor& want, const Tensor& got) {
  double diff = 0, norm = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double d = want.GetAsDouble(i) - got.GetAsDouble(i);
    diff += d * d;
    norm += want.GetAsDouble(i) * want.GetAsDouble(i);
  }
  return std::sqrt(diff / std::max(norm, 1e-30));
}

// In float64: in float32 Adam's first steps turn a gradient that cancels to
// about zero into +-lr by the sign of its rounding, which differs between the
// whole batch and the mean of two halves (and between BLAS kernels).
TEST(TranspilerTest, SimulatedParameterServersTrainLikeOneProcess) {
  constexpr int kSteps = 3;
  constexpr DataType kF64 = DataType::kFloat64;
  Mlp m;
  BuildMlp(&m, /*decay=*/true, /*placeable=*/true, kF64);
  Executor exe;

  // One process, the whole batch.
  Scope single;
  exe.Run(m.startup.desc(), &single);
  auto step = exe.Prepare(m.main.desc(), &single);
  for (int s = 0; s < kSteps; ++s) exe.Run(*step, Batch(s, 0, 8, kF64));

  // Two trainers on half batches, two servers.
  const TranspileResult r = Transpile(m.main.desc(), m.startup.desc(), TwoServers());
  const auto& ops = r.trainer_main.blocks(0).ops();
  int first_send = 0, first_concat = 0;
  while (ops[first_send].type() != "send") ++first_send;
  while (ops[first_concat].type() != "concat") ++first_concat;
  const proto::ProgramDesc forward_backward = OpsRange(r.trainer_main, 0, first_send);
  const proto::ProgramDesc concats = OpsRange(r.trainer_main, first_concat, ops.size());

  Scope trainers[2], servers[2];
  std::unique_ptr<PreparedBlock> compute[2], join[2];
  for (int t = 0; t < 2; ++t) {
    exe.Run(r.trainer_startup, &trainers[t]);
    compute[t] = exe.Prepare(forward_backward, &trainers[t]);
    join[t] = exe.Prepare(concats, &trainers[t]);
  }
  std::vector<std::unique_ptr<PreparedBlock>> prepare(2);
  std::vector<std::vector<std::unique_ptr<PreparedBlock>>> optimize(2);
  for (int s = 0; s < 2; ++s) {
    exe.Run(r.servers[s].startup, &servers[s]);
    for (const auto& var : r.servers[s].main.blocks(0).vars()) servers[s].Var(var.name());
    const proto::OpDesc& serve = r.servers[s].main.blocks(0).ops(0);
    prepare[s] = exe.Prepare(r.servers[s].main, &servers[s], BlockAttr(serve, "prepare_block"));
    for (int b : BlockAttrs(serve, "optimize_blocks")) {
      optimize[s].push_back(exe.Prepare(r.servers[s].main, &servers[s], b));
    }
  }
  auto server_of = [&](const proto::OpDesc& op) {
    return AttrValue<std::string>(*FindAttr(op, "endpoint")) == kServers[0] ? 0 : 1;
  };
  for (int s = 0; s < kSteps; ++s) {
    for (int t = 0; t < 2; ++t) exe.Run(*compute[t], Batch(s, 4 * t, 4, kF64));
    // send: the server gets the mean of the trainers' gradients.
    for (const auto& op : ops) {
      if (op.type() != "send") continue;
      for (const std::string& grad : InputVars(op, "X")) {
        Tensor mean = trainers[0].GetTensor(grad).Clone();
        const double* other = trainers[1].GetTensor(grad).data<double>();
        double* p = mean.mutable_data<double>();
        for (int64_t i = 0; i < mean.numel(); ++i) p[i] = (p[i] + other[i]) / 2;
        *servers[server_of(op)].Var(grad)->mutable_tensor() = std::move(mean);
      }
    }
    for (int v = 0; v < 2; ++v) {
      exe.Run(*prepare[v]);
      for (auto& block : optimize[v]) exe.Run(*block);
    }
    // recv: the trainers get the servers' parameters; concat joins slices.
    for (const auto& op : ops) {
      if (op.type() != "recv") continue;
      const std::string param = OutputVar(op, "Out");
      for (auto& trainer : trainers) {
        trainer.Var(param)->mutable_tensor()->CopyFrom(servers[server_of(op)].GetTensor(param));
      }
    }
    for (int t = 0; t < 2; ++t) exe.Run(*join[t]);
  }

  int compared = 0;
  for (const auto& var : m.main.desc().blocks(0).vars()) {
    if (!var.parameter()) continue;
    const Tensor& want = single.GetTensor(var.name());
    for (auto& trainer : trainers) {
      EXPECT_LE(RelativeDiff(want, trainer.GetTensor(var.name())), 1e-5) << var.name();
    }
    // The parameters moved from their initial values.
    EXPECT_GT(RelativeDiff(want,
                           [&] {
                             Scope fresh;
                             exe.Run(m.startup.desc(), &fresh);
                             return fresh.GetTensor(var.name()).Clone();
                           }()),
              1e-4)
        << var.name();
    ++compared;
  }
  EXPECT_EQ(compared, 6);
  // Each server ran the decay once per step.
  for (auto& server : servers) EXPECT_EQ(server.GetTensor("step").GetAsDouble(0), kSteps);
}

}  // namespace
}  // namespace rill
