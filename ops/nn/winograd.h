// Convolution at stride 1 by Winograd's minimal filtering F(2x2, 3x3) and
// F(2x2, 5x5): each 2x2 block of outputs ("tile") is computed from the
// (r+1)x(r+1) block of input under it with (r+1)^2 multiplications per
// channel pair instead of im2col's 4 r^2 (16 against 36 for 3x3, 36 against
// 100 for 5x5). The input tiles and the filters are transformed into (r+1)^2
// planes each, one GEMM per plane multiplies them ([out channels x channels]
// x [channels x tiles]), and the products are transformed back into outputs.
// The GEMMs see the tiles of several images at once (a chunk of up to 8).
//
// The transforms are exact small integer or fractional combinations, so
// results differ from im2col's in rounding only. Measured in float32 against
// exact sums of n products: 3x3 outputs with 8 to 256 channels within
// 0.13-0.20 n eps (im2col's: 0.09-0.44), filter gradients within 0.03-0.21
// n eps (0.03-0.08). 5x5's transforms have larger coefficients (up to 5 and
// 1/24), and its rounding is larger: outputs with 8 to 64 channels within
// 1.7-2.2 n eps, filter gradients within 1.0-5.0 n eps (relative to the
// values, 2e-5 and 7e-5 on 32 channels of 14x14: far below what training
// notices; the CNN reached 0.9051 test accuracy in 2 epochs).
//
// conv2d's CPU kernels take this path where WinogradApplies: forward,
// Input@GRAD (the gradient of a stride-1 convolution with respect to its
// input is one as well, over Output@GRAD with the filters turned 180 degrees
// and transposed) and Filter@GRAD.
#pragma once

#include <cstdint>

#include "ops/nn/window2d.h"

namespace rill {

// One Winograd convolution: images of `channels` x height x width, zero
// padding pad_h / pad_w, `kernel` x `kernel` filters (3 or 5), stride 1,
// out_channels outputs of out_h x out_w (height + 2 * pad_h - kernel + 1,
// likewise across).
struct WinogradShape {
  int64_t channels = 0;
  int64_t out_channels = 0;
  int64_t height = 0;
  int64_t width = 0;
  int64_t pad_h = 0;
  int64_t pad_w = 0;
  int64_t kernel = 3;
  int64_t tile() const { return kernel + 1; }  // input values a tile reads across
  int64_t planes() const { return tile() * tile(); }
  int64_t out_h() const { return height + 2 * pad_h - kernel + 1; }
  int64_t out_w() const { return width + 2 * pad_w - kernel + 1; }
  int64_t tiles_h() const { return (out_h() + 1) / 2; }
  int64_t tiles_w() const { return (out_w() + 1) / 2; }
  // Transformed tiles and products of one image: planes x (channels +
  // out_channels) x tiles.
  int64_t values_per_image() const;
  // Images whose tiles one round of GEMMs takes (winograd.cc says why).
  int64_t images_per_chunk() const;
};

// Whether conv2d of this geometry takes the Winograd path: 3x3 or 5x5,
// stride 1, no dilation, one group, padding below the kernel's size, at
// least 8 channels in and out (fewer leave the GEMMs too thin to gain from
// it), and images small enough that a chunk holds 4 of them (larger ones keep
// im2col, whose GEMMs are wide enough there).
bool WinogradApplies(const ConvGeometry& g);

// The forward shape of a geometry that applies, and the shape of its
// Input@GRAD convolution (over Output@GRAD: channels and out_channels
// swapped, padding kernel - 1 - pad, giving the input's size back).
WinogradShape WinogradForward(const ConvGeometry& g);
WinogradShape WinogradInputGrad(const ConvGeometry& g);

// Transforms filters [out_channels, channels, k, k] into u: s.planes() planes of
// [out_channels x channels]. With `turned`, the filters are w[c][o] turned
// 180 degrees for each (o, c) of the forward filters w [channels' =
// out_channels, out_channels' = channels]: what Input@GRAD convolves with.
// `s` is the shape of the convolution u will be used for.
template <class T>
void WinogradFilters(const T* w, const WinogradShape& s, bool turned, T* u);

// Convolves `images` images x (NCHW, s.channels each) with the transformed
// filters u into y (s.out_channels each), overwriting y. The images are taken
// in chunks of s.images_per_chunk() from the first; a caller that splits the
// batch at multiples of it computes the same bits as one call.
template <class T>
void WinogradConvolve(const T* x, const T* u, const WinogradShape& s, int64_t images, T* y);

// Filter@GRAD of the forward convolution s over `images` images x and their
// output gradients dy, written to dw [out_channels, channels, k, k]: in the
// transformed domain, dU = sum over tiles of (A dY A^T) .* (B^T d B), one
// GEMM per plane accumulated chunk after chunk, then dW = G^T dU G.
//
// In parts, for ParallelFor: the images' chunks fall into
// WinogradFilterGradParts runs (a number that depends on the sizes only);
// part p sums its run's dU into its own WinogradFilterGradPartValues values.
// The caller adds the parts in order and WinogradFilterGradFromSum
// transforms the sum back. Run by any number of threads: the same bits.
//
// Filter gradients (Winograd's and im2col's, conv2d_op.cc) are cut into at
// most this many parts: enough for the threads of a place to share, few
// enough that adding the parts' sums stays cheap next to the GEMMs.
inline constexpr int64_t kMaxFilterGradParts = 8;
int64_t WinogradFilterGradParts(const WinogradShape& s, int64_t images);
int64_t WinogradFilterGradPartValues(const WinogradShape& s);
template <class T>
void WinogradFilterGradPart(const T* x, const T* dy, const WinogradShape& s, int64_t images,
                            int64_t part, T* du);
// dw = G^T du G for the sum du of the parts.
template <class T>
void WinogradFilterGradFromSum(const T* du, const WinogradShape& s, T* dw);

}  // namespace rill
