// 3x3 convolution at stride 1 by Winograd's minimal filtering F(2x2, 3x3):
// each 2x2 block of outputs ("tile") is computed from the 4x4 block of input
// under it with 16 multiplications per channel pair instead of im2col's 36.
// The input tiles and the filters are transformed into 16 planes each, one
// GEMM per plane multiplies them ([out channels x channels] x [channels x
// tiles]), and the products are transformed back into outputs. The GEMMs
// see the tiles of several images at once (a chunk of up to 8).
//
// The transforms add and subtract (and halve the filters), so results differ
// from im2col's in rounding only, and by as little: float32 outputs with 8 to
// 256 channels were within 0.13-0.20 n eps of exact sums of n products
// (im2col's: 0.09-0.44), filter gradients within 0.03-0.21 n eps
// (0.03-0.08). conv2d's CPU kernels take this path where Winograd3x3Applies:
// forward, Input@GRAD (the gradient of a 3x3 stride-1 convolution with
// respect to its input is one as well, over Output@GRAD with the filters
// turned 180 degrees and transposed) and Filter@GRAD.
#pragma once

#include <cstdint>

#include "ops/nn/window2d.h"

namespace rill {

// One Winograd convolution: images of `channels` x height x width, zero
// padding pad_h / pad_w, 3x3 filters, stride 1, out_channels outputs of
// out_h x out_w (height + 2 * pad_h - 2, likewise across).
struct Winograd3x3Shape {
  int64_t channels = 0;
  int64_t out_channels = 0;
  int64_t height = 0;
  int64_t width = 0;
  int64_t pad_h = 0;
  int64_t pad_w = 0;
  int64_t out_h() const { return height + 2 * pad_h - 2; }
  int64_t out_w() const { return width + 2 * pad_w - 2; }
  int64_t tiles_h() const { return (out_h() + 1) / 2; }
  int64_t tiles_w() const { return (out_w() + 1) / 2; }
  // Transformed tiles and products of one image: 16 x (channels +
  // out_channels) x tiles.
  int64_t values_per_image() const;
  // Images whose tiles one round of GEMMs takes (winograd3x3.cc says why).
  int64_t images_per_chunk() const;
};

// Whether conv2d of this geometry takes the Winograd path: 3x3, stride 1,
// no dilation, one group, padding of at most 2, at least 8 channels in and
// out (fewer leave the GEMMs too thin to gain from it), and images small
// enough that a chunk holds 4 of them (larger ones keep im2col, whose GEMMs
// are wide enough there: up to 16x16 outputs with 64 channels in and out, 22x22 with 32).
bool Winograd3x3Applies(const ConvGeometry& g);

// The forward shape of a geometry that applies, and the shape of its
// Input@GRAD convolution (over Output@GRAD: channels and out_channels
// swapped, padding 2 - pad, giving the input's size back).
Winograd3x3Shape Winograd3x3Forward(const ConvGeometry& g);
Winograd3x3Shape Winograd3x3InputGrad(const ConvGeometry& g);

// Transforms filters [out_channels, channels, 3, 3] into u: 16 planes of
// [out_channels x channels]. With `turned`, the filters are w[c][o] turned
// 180 degrees for each (o, c) of the forward filters w [channels' =
// out_channels, out_channels' = channels]: what Input@GRAD convolves with.
// `s` is the shape of the convolution u will be used for.
template <class T>
void Winograd3x3Filters(const T* w, const Winograd3x3Shape& s, bool turned, T* u);

// Convolves `images` images x (NCHW, s.channels each) with the transformed
// filters u into y (s.out_channels each), overwriting y. The images are taken
// in chunks of s.images_per_chunk() from the first; a caller that splits the
// batch at multiples of it computes the same bits as one call.
template <class T>
void Winograd3x3Convolve(const T* x, const T* u, const Winograd3x3Shape& s, int64_t images, T* y);

// Filter@GRAD of the forward convolution s over `images` images x and their
// output gradients dy, written to dw [out_channels, channels, 3, 3]: in the
// transformed domain, dU = sum over tiles of (A dY A^T) .* (B^T d B), one
// GEMM per plane accumulated chunk after chunk, then dW = G^T dU G.
template <class T>
void Winograd3x3FilterGrad(const T* x, const T* dy, const Winograd3x3Shape& s, int64_t images,
                           T* dw);

}  // namespace rill
