// libFuzzer target: feeds arbitrary bytes to DecodeWire, as a peer could
// (compressed gradients included: seeds push_int8 and push_int4_rows).
// rill::Error is the expected outcome for bad input. A message it accepts
// must give up its payload without error, and both the message re-encoded and
// one rebuilt from its payload must decode to the same thing.
#include <google/protobuf/stubs/logging.h>
#include <google/protobuf/util/message_differencer.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "actors/distributed/wire.h"
#include "rill/error.h"

namespace {

using rill::proto::WireMessage;

const char kPeer[] = "fuzz peer";

rill::WireLimits Limits() {
  rill::WireLimits limits;
  limits.max_message_bytes = 4096;  // under run_fuzzer.sh's -max_len, so the limit is exercised too
  return limits;
}

void Require(bool condition) {
  if (!condition) __builtin_trap();
}

bool SameTensor(const rill::Tensor& a, const rill::Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         (a.bytes() == 0 || std::memcmp(a.raw_data(), b.raw_data(), a.bytes()) == 0);
}

// A PUSH or VALUE built again from what `message` carries.
WireMessage RebuildValue(const WireMessage& message) {
  WireMessage rebuilt;
  if (message.selected_rows()) {
    rebuilt = rill::WirePushRows(message.var(), message.step(), rill::WireRows(message));
    rebuilt.set_kind(message.kind());
  } else if (message.kind() == WireMessage::PUSH) {
    rebuilt = rill::WirePush(message.var(), message.step(), rill::WireTensor(message));
  } else {
    rebuilt = rill::WireValue(message.var(), message.step(), rill::WireTensor(message));
  }
  return rebuilt;
}

void CheckSamePayload(const WireMessage& a, const WireMessage& b) {
  Require(a.kind() == b.kind() && a.var() == b.var() && a.step() == b.step() &&
          a.selected_rows() == b.selected_rows());
  if (a.selected_rows()) {
    const rill::SelectedRows x = rill::WireRows(a), y = rill::WireRows(b);
    Require(x.rows == y.rows && x.height == y.height && SameTensor(x.value, y.value));
  } else {
    Require(SameTensor(rill::WireTensor(a), rill::WireTensor(b)));
  }
}

}  // namespace

// A compressed value reads back finite wherever its chunk's scale is (the
// decoder refuses infinite and negative scales and out-of-range codes).
void CheckCompressedReadsBackFinite(const WireMessage& message) {
  if (!message.has_compressed()) return;
  const rill::Tensor value =
      message.selected_rows() ? rill::WireRows(message).value : rill::WireTensor(message);
  const float* x = value.data<float>();
  for (int64_t i = 0; i < value.numel(); ++i) Require(!std::isinf(x[i]));
}

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  WireMessage message;
  try {
    message = rill::DecodeWire(input, Limits(), kPeer);
  } catch (const rill::Error&) {
    return 0;  // refused: expected for most inputs
  }
  // From here on any rill::Error escapes and is reported as a crash. The
  // re-encoding may differ in size from the input (packed fields, shorter
  // varints), so it is decoded with the default limit.
  const rill::WireLimits default_limits{};  // 256 MiB
  // What was accepted re-encodes to the same message (unknown fields included).
  const WireMessage again = rill::DecodeWire(rill::EncodeWire(message), default_limits, kPeer);
  Require(google::protobuf::util::MessageDifferencer::Equals(message, again));
  if (message.kind() == WireMessage::PUSH || message.kind() == WireMessage::VALUE) {
    // An accepted value comes out, and what a builder makes of it decodes to the same.
    const WireMessage rebuilt = RebuildValue(message);
    CheckSamePayload(message, rill::DecodeWire(rill::EncodeWire(rebuilt), default_limits, kPeer));
    CheckCompressedReadsBackFinite(message);
  }
  return 0;
}
