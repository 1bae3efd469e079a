// Builder methods for channels, go blocks, while loops and select.
#include <algorithm>
#include <tuple>
#include <utility>

#include "rill/builder.h"
#include "rill/op_desc.h"

namespace rill {
namespace {

void CheckCondition(const Var& condition) {
  const bool one =
      std::find(condition.shape.begin(), condition.shape.end(), -1) == condition.shape.end() &&
      NumElements(condition.shape) == 1;
  RILL_CHECK(one, kInvalidArgument, "while condition \"", condition.name,
             "\" must have one element, has shape ", ShapeToString(condition.shape));
}

}  // namespace

void Builder::CheckSubBlock(int sub_block, const char* op) const {
  const proto::ProgramDesc& program = main_->desc();
  RILL_CHECK(sub_block > 0 && sub_block < program.blocks_size() &&
                 program.blocks(sub_block).parent_idx() == block_,
             kInvalidArgument, op, ": block ", sub_block, " is not a sub-block of block ", block_,
             " (OpenSubBlock makes one there)");
}

Var Builder::Variable(const std::string& name, const Shape& shape, DataType dtype) {
  RILL_CHECK(FindLocalVarDesc(main_->desc().mutable_blocks(block_), name) == nullptr,
             kInvalidArgument, "variable \"", name, "\" is already declared in block ", block_);
  Declare(main_, name, shape, dtype, block_);
  return Var{name, shape, dtype};
}

Var Builder::MakeChannel(const Shape& shape, DataType dtype, int capacity) {
  Var channel = AppendOp("channel_create", {}, {{"Out", 1}}, [&](proto::OpDesc* op) {
    SetAttr(op, "capacity", capacity);
    SetAttr(op, "dtype", std::string(DataTypeName(dtype)));
    SetAttr(op, "shape", std::vector<int64_t>(shape.begin(), shape.end()));
  })[0];
  FindLocalVarDesc(main_->desc().mutable_blocks(block_), channel.name)->set_kind(proto::CHANNEL);
  return channel;
}

void Builder::ChannelSend(const Var& channel, const Var& x) {
  AppendOpTo("channel_send", {{"Channel", {channel}}, {"X", {x}}}, {{"ChannelOut", {channel}}});
}

std::pair<Var, Var> Builder::ChannelRecv(const Var& channel) {
  const std::string prefix = main_->UniqueName("channel_recv");
  Var out{prefix + ".Out", channel.shape, channel.dtype};
  Var status{prefix + ".Status", {1}, DataType::kInt32};
  Declare(main_, out.name, out.shape, out.dtype, block_);
  Declare(main_, status.name, status.shape, status.dtype, block_);
  ChannelRecvInto(channel, out, status);
  return {out, status};
}

void Builder::ChannelRecvInto(const Var& channel, const Var& out, const Var& status) {
  AppendOpTo("channel_recv", {{"Channel", {channel}}},
             {{"Out", {out}}, {"Status", {status}}, {"ChannelOut", {channel}}});
}

void Builder::ChannelClose(const Var& channel) {
  AppendOpTo("channel_close", {{"Channel", {channel}}}, {{"ChannelOut", {channel}}});
}

void Builder::Go(const std::function<void(Builder&)>& body) { Go(SubBlock(body)); }

void Builder::Go(int sub_block) {
  CheckSubBlock(sub_block, "go");
  AppendOpTo("go", {}, {}, [&](proto::OpDesc* op) { SetBlockAttr(op, "sub_block", sub_block); });
}

void Builder::While(const Var& condition, const std::function<void(Builder&)>& body) {
  CheckCondition(condition);
  While(condition, SubBlock(body));
}

void Builder::While(const Var& condition, int sub_block) {
  CheckCondition(condition);
  CheckSubBlock(sub_block, "while");
  AppendOpTo("while", {{"Condition", {condition}}}, {},
             [&](proto::OpDesc* op) { SetBlockAttr(op, "sub_block", sub_block); });
}

Builder::SelectCase Builder::SelectCase::Recv(
    Var channel, std::function<void(Builder&, const Var&, const Var&)> body) {
  return {Kind::kRecv, std::move(channel), {}, std::move(body)};
}
Builder::SelectCase Builder::SelectCase::Send(Var channel, Var value,
                                              std::function<void(Builder&)> body) {
  return {Kind::kSend, std::move(channel), std::move(value),
          [body = std::move(body)](Builder& b, const Var&, const Var&) {
            if (body) body(b);
          }};
}
Builder::SelectCase Builder::SelectCase::Default(std::function<void(Builder&)> body) {
  return {Kind::kDefault, {}, {}, [body = std::move(body)](Builder& b, const Var&, const Var&) {
            if (body) body(b);
          }};
}

void Builder::Select(const std::vector<SelectCase>& cases) {
  RILL_CHECK(!cases.empty(), kInvalidArgument, "select needs at least one case");
  std::vector<SelectBlock> blocks;
  for (const SelectCase& c : cases) {
    SelectBlock s{c.kind, c.channel, c.value, {}, {}, -1};
    if (c.kind == SelectCase::Kind::kRecv) std::tie(s.out, s.status) = SelectRecvVars(c.channel);
    s.block = SubBlock([&](Builder& b) {
      if (c.body) c.body(b, s.out, s.status);
    });
    blocks.push_back(std::move(s));
  }
  Select(blocks);
}

std::pair<Var, Var> Builder::SelectRecvVars(const Var& channel) {
  const std::string prefix = main_->UniqueName("select_recv");
  Var out{prefix + ".Out", channel.shape, channel.dtype};
  Var status{prefix + ".Status", {1}, DataType::kInt32};
  Declare(main_, out.name, out.shape, out.dtype, block_);
  Declare(main_, status.name, status.shape, status.dtype, block_);
  return {out, status};
}

void Builder::Select(const std::vector<SelectBlock>& cases) {
  RILL_CHECK(!cases.empty(), kInvalidArgument, "select needs at least one case");
  std::vector<std::string> kinds;
  std::vector<Var> channels, values, outs, statuses;
  for (const SelectBlock& c : cases) {
    CheckSubBlock(c.block, "select");
    if (c.kind == SelectCase::Kind::kRecv) {
      kinds.push_back("recv");
      channels.push_back(c.channel);
      outs.push_back(c.out);
      statuses.push_back(c.status);
    } else if (c.kind == SelectCase::Kind::kSend) {
      kinds.push_back("send");
      channels.push_back(c.channel);
      values.push_back(c.value);
    } else {
      kinds.push_back("default");
    }
  }
  AppendOpTo("select", {{"Channels", channels}, {"X", values}},
             {{"Out", outs}, {"Status", statuses}, {"ChannelsOut", channels}},
             [&](proto::OpDesc* op) {
               SetAttr(op, "case_kinds", kinds);
               auto* list = MutableAttr(op, "case_blocks")->mutable_blocks();
               for (const SelectBlock& c : cases) list->add_values(c.block);
             });
}

Var Builder::Reader(const std::string& name) {
  proto::VarDesc* desc = Declare(main_, name, {}, DataType::kFloat32, block_);
  desc->set_kind(proto::READER);
  desc->set_persistable(true);
  desc->set_stop_gradient(true);
  return Var{name, {}, DataType::kFloat32};
}

void Builder::Read(const Var& reader, const std::vector<Var>& fields, bool first) {
  AppendOpTo("read", {{"Reader", {reader}}}, {{"Out", fields}});
  if (!first) return;
  auto* ops = main_->desc().mutable_blocks(block_)->mutable_ops();
  for (int i = ops->size() - 1; i > 0; --i) ops->SwapElements(i, i - 1);
}

void Builder::Assign(const Var& x, const Var& out) {
  AppendOpTo("assign", {{"X", {x}}}, {{"Out", {out}}});
}

Var Builder::LessThan(const Var& x, const Var& y) {
  return AppendOp("less_than", {{"X", {x}}, {"Y", {y}}}, {{"Out", 1}})[0];
}

void Builder::Increment(const Var& counter, float step) {
  AppendOpTo("increment", {{"X", {counter}}}, {{"Out", {counter}}},
             [&](proto::OpDesc* op) { SetAttr(op, "step", step); });
}

Var Builder::ReadStep(const Var& x, const Var& index, int axis) {
  return AppendOp("read_step", {{"X", {x}}, {"Index", {index}}}, {{"Out", 1}},
                  [&](proto::OpDesc* op) { SetAttr(op, "axis", axis); })[0];
}

void Builder::WriteStep(const Var& x, const Var& value, const Var& index, int axis) {
  AppendOpTo("write_step", {{"X", {x}}, {"Value", {value}}, {"Index", {index}}}, {{"Out", {x}}},
             [&](proto::OpDesc* op) { SetAttr(op, "axis", axis); });
}

Var Builder::ConstantBatchSizeLike(const Var& input, const Shape& shape, float value,
                                   DataType dtype, int input_dim, int output_dim) {
  return AppendOp("fill_constant_batch_size_like", {{"Input", {input}}}, {{"Out", 1}},
                  [&](proto::OpDesc* op) {
                    SetAttr(op, "shape", std::vector<int64_t>(shape.begin(), shape.end()));
                    SetAttr(op, "dtype", std::string(DataTypeName(dtype)));
                    SetAttr(op, "value", value);
                    SetAttr(op, "input_dim_idx", input_dim);
                    SetAttr(op, "output_dim_idx", output_dim);
                  })[0];
}

}  // namespace rill
