// Where a receiver reads the tensors of frames whose variables it knows
// (TransportCallbacks::destination): a new tensor of the variable's own dtype
// and shape, allocated when the frame's meta names it, so the payload's bytes
// land in their final buffer as they arrive. A server knows the gradients it
// receives (from its program); a trainer learns a parameter's shape from its
// first VALUE. The sizes come from the receiver's own variables, never from a
// peer's claim: a frame that names an unknown variable or another shape gets
// no destination (the decoder then grows a buffer as bytes arrive, and the
// receiver's checks refuse what does not fit).
//
// A server names destinations only on the connections of trainers that said
// HELLO (Admit): with at most one frame in progress per connection, what it
// allocates ahead of the bytes is bounded by its trainers x its largest
// bundle, the memory their pushes take anyway.
//
//   PayloadDestinations known(/*admitted_only=*/true);
//   known.Expect("fc_0.w@GRAD", DataType::kFloat32, {784, 256});
//   known.Admit(connection);  // trainer 0 said HELLO on it
//   callbacks.destination = [&known](ConnectionId id, const proto::WireMessage& m) {
//     return known.For(id, m);
//   };
//
// Thread-safe: Expect and For may be called from any thread.
#pragma once

#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "actors/distributed/transport_options.h"
#include "rill/proto/wire.pb.h"
#include "rill/tensor.h"

namespace rill {

class PayloadDestinations {
 public:
  // admitted_only: only frames on admitted connections get destinations.
  explicit PayloadDestinations(bool admitted_only = false) : admitted_only_(admitted_only) {}

  // Values of `var` are `dtype` x `shape` from now on.
  void Expect(const std::string& var, DataType dtype, const Shape& shape);
  void Admit(ConnectionId connection);
  void Dismiss(ConnectionId connection);
  // A new tensor for the payload of `message` on `connection` (a dense PUSH
  // or VALUE of a known variable with its shape, or a PUSH_BUNDLE of only
  // such parts: its BundleCarrier); else a default Tensor.
  Tensor For(ConnectionId connection, const proto::WireMessage& message) const;

 private:
  // The expected dtype and shape of `var` when `tensor` describes them, else null.
  const std::pair<DataType, Shape>* Known(const std::string& var,
                                          const proto::TensorProto& tensor) const;

  const bool admitted_only_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::pair<DataType, Shape>> expected_;
  std::unordered_set<ConnectionId> admitted_;
};

}  // namespace rill
