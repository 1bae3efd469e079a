#include "actors/channels/tensor_channel.h"

#include <algorithm>

namespace rill {

std::string TensorChannel::Describe() const {
  return StrCat("channel \"", name_, "\" of ", DataTypeName(dtype_), ShapeToString(shape_),
                ", capacity ", channel_.capacity());
}

void TensorChannel::CheckElement(const Tensor& value) const {
  RILL_CHECK(value.initialized(), kInvalidArgument, "sending on ", Describe(),
             ": the value holds nothing");
  RILL_CHECK(value.dtype() == dtype_ && ShapesCompatible(shape_, value.shape()), kInvalidArgument,
             "sending ", value.Describe(), " on ", Describe());
}

Tensor TensorChannel::ZeroElement() const {
  Shape shape = shape_;
  std::replace(shape.begin(), shape.end(), int64_t{-1}, int64_t{0});
  Tensor zero(dtype_, shape);
  zero.Fill(0);
  return zero;
}

std::shared_ptr<TensorChannel> ChannelInput(const KernelContext& ctx, const std::string& slot,
                                            int i) {
  auto channel = std::dynamic_pointer_cast<TensorChannel>(ctx.InputVar(slot, i)->object());
  RILL_CHECK(channel != nullptr, kInvalidArgument, "input ", slot, " of op ", ctx.op().type(),
             " names variable \"", ctx.InputName(slot, i),
             "\", which holds no channel (run channel_create first)");
  return channel;
}

}  // namespace rill
