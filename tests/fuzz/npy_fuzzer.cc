// libFuzzer target: feeds arbitrary bytes to the .npy reader. rill::Error is
// the expected outcome for bad input; whatever parses must write back to a
// file that reads as the same tensor, bit for bit.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "rill/error.h"
#include "rill/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  rill::Tensor tensor;
  try {
    tensor = rill::ParseNpy(input, "fuzz.npy");
  } catch (const rill::Error&) {
    return 0;  // not a supported .npy file: expected
  }
  const rill::Tensor again = rill::ParseNpy(rill::SerializeNpy(tensor));
  if (again.dtype() != tensor.dtype() || again.shape() != tensor.shape() ||
      std::memcmp(again.raw_data(), tensor.raw_data(), tensor.bytes()) != 0) {
    __builtin_trap();  // the round trip changed the tensor
  }
  return 0;
}
