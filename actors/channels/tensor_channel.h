// TensorChannel: the object a channel variable of a program holds — a
// Channel<Tensor> with the element type and shape its VarDesc declares (-1
// dims match anything). channel_create makes one; channel_send, channel_recv,
// channel_close, select and go blocks reach it through the variable.
#pragma once

#include <memory>
#include <string>

#include "rill/channel.h"
#include "rill/kernel_context.h"
#include "rill/scope.h"
#include "rill/shape.h"
#include "rill/tensor.h"

namespace rill {

class TensorChannel : public VarObject {
 public:
  TensorChannel(std::string name, DataType dtype, Shape shape, size_t capacity)
      : name_(std::move(name)), dtype_(dtype), shape_(std::move(shape)), channel_(capacity) {}

  std::string Describe() const override;
  const std::string& name() const { return name_; }
  DataType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  Channel<Tensor>& channel() { return channel_; }

  // Throws kInvalidArgument naming the channel when `value` does not fit.
  void CheckElement(const Tensor& value) const;
  // What a receive on a closed channel yields: zeros (unknown dims as 0).
  Tensor ZeroElement() const;

 private:
  std::string name_;
  DataType dtype_;
  Shape shape_;
  Channel<Tensor> channel_;
};

// The channel input `slot` #i of an op is bound to; throws naming the
// variable when it holds no channel (channel_create has not run).
std::shared_ptr<TensorChannel> ChannelInput(const KernelContext& ctx, const std::string& slot,
                                            int i = 0);

}  // namespace rill
