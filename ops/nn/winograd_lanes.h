// The tile transforms of Winograd's convolution (winograd.cc) as loops
// over a chunk's images, built once per vector width: winograd_lanes.cc
// for every machine (16-byte vectors) and, on x86-64,
// winograd_lanes_avx2.cc (32-byte vectors, compiled for AVX2; taken where
// the CPU has it). Both compute the same bits: the transforms add,
// subtract and multiply by small integers value by value, and neither build
// enables FMA, so nothing is contracted differently.
#pragma once

#include <cstdint>

#include "ops/nn/winograd.h"

namespace rill {

// Within a chunk of n images, a GEMM column is one tile of one image: column
// k * n + i is tile k = th * tiles_w + tw of image i. The images are first
// copied image-minor and zero-padded, xt[c][y][x][i], so that each value a
// transform reads or writes is a run of n consecutive values, one per image:
// the transforms are loops over images, which vectorise, where loops over the
// few tiles of a 7x7 or 14x14 plane were mostly overhead.
struct WinogradTiles {
  int64_t images;    // n
  int64_t padded_h;  // 2 * tiles_h + kernel - 1: the padded image in whole tiles
  int64_t padded_w;
  int64_t tiles;  // per image
  WinogradTiles(const WinogradShape& s, int64_t n)
      : images(n),
        padded_h(2 * s.tiles_h() + s.kernel - 1),
        padded_w(2 * s.tiles_w() + s.kernel - 1),
        tiles(s.tiles_h() * s.tiles_w()) {}
  int64_t columns() const { return tiles * images; }
};

template <class T>
struct WinogradTransforms {
  // Writes B^T d B of every tile of every channel of xt [channels, padded_h,
  // padded_w, n] into v: element e of channel c's column j at
  // v[e * e_stride + c * columns + j].
  void (*input)(const T* xt, const WinogradShape& s, const WinogradTiles& l, T* v,
                int64_t e_stride);
  // Writes A^T m A of every tile of every output channel (element e of
  // channel o's column j at m[e * e_stride + o * columns + j]) into yt
  // [out_channels, 2 * tiles_h, 2 * tiles_w, n].
  void (*output)(const T* m, int64_t e_stride, const WinogradShape& s, const WinogradTiles& l,
                 T* yt);
  // Writes A g A^T of every 2x2 tile g of yt [out_channels, 2 * tiles_h,
  // 2 * tiles_w, n] (the gradient of the output tiles) into dm, laid out as
  // output's m: the gradient of the products, for the filter gradient.
  void (*output_grad)(const T* yt, const WinogradShape& s, const WinogradTiles& l, T* dm,
                      int64_t e_stride);
};

// The transforms for filters of `kernel` x `kernel` (3 or 5).
WinogradTransforms<float> WinogradTransforms16(float, int kernel);
WinogradTransforms<double> WinogradTransforms16(double, int kernel);
WinogradTransforms<float> WinogradTransformsAvx2(float, int kernel);
WinogradTransforms<double> WinogradTransformsAvx2(double, int kernel);

}  // namespace rill
