// Winograd's tile transforms with 32-byte vectors; this file is compiled with
// -mavx2 (ops/nn/CMakeLists.txt) and runs only where the CPU has AVX2
// (winograd3x3.cc asks).
#include "ops/nn/winograd3x3_lanes.inc"

namespace rill {

WinogradTransforms<float> WinogradTransformsAvx2(float) { return LaneTransforms<float, 32>(); }
WinogradTransforms<double> WinogradTransformsAvx2(double) { return LaneTransforms<double, 32>(); }

}  // namespace rill
