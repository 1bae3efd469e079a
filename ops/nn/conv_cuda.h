// CUDA kernels of conv2d and conv2d_grad (conv2d_op.cc), as plain launchers:
// this header is included by conv_cuda.cu (nvcc, C++17) and by the glue in
// conv_op_cuda.cc (C++20), so it holds only what both read alike. A run's
// sizes are window2d.h's ConvGeometry, as the CPU kernels' are.
//
// As on the CPU: im2col + GEMM per image and channel group. The images are
// taken in chunks (ConvChunkImages) whose column matrices fit the scratch;
// im2col and col2im run one thread per element (col2im gathers: each input
// pixel sums the column entries that read it, in the CPU's tap order, so it
// is race-free and deterministic), and the GEMMs are cuBLAS strided-batched
// calls on the stream (default math: no TF32).
//
// Rounding. im2col copies and col2im adds in the CPU's order, so the only
// differences from the CPU are the GEMMs' summation orders (cuBLAS's blocking
// and OpenBLAS's differ): Output and Input@GRAD are a few ulp of their sums'
// magnitude off, and Filter@GRAD, a GEMM per image added to the running sum
// image by image (the CPU's Gemm with beta = 1, one image after another), as
// well. The kernels here are deterministic (no atomics); cuBLAS's GEMMs are
// run to run on one GPU model and cuBLAS version while a handle has one
// stream active at a time (its documented guarantee; concurrent streams on one
// handle may pick other internal workspaces unless each has its own).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "ops/nn/window2d.h"

namespace rill::cuda {

// Images per chunk (at least 1) so that a chunk's scratch stays within a
// fixed budget, and the scratch (elements of `element_bytes` each) a chunk of
// `images` needs: the column matrices of its images (none when direct()) and,
// for the gradient with Filter@GRAD, each image's Filter@GRAD term.
int64_t ConvChunkImages(const ConvGeometry& s, int64_t element_bytes, bool filter_grad);
int64_t ConvScratchElements(const ConvGeometry& s, int64_t images, bool filter_grad);

// Output = conv2d(Input, Filter). `scratch` holds ConvScratchElements(s,
// chunk, false) elements (may be null when that is 0).
template <class T>
void Conv2d(const T* x, const T* w, T* y, const ConvGeometry& s, T* scratch, int64_t chunk,
            cudaStream_t stream);

// Input@GRAD (dx) and Filter@GRAD (dw), either may be null; dy null: both
// zero. `scratch` holds ConvScratchElements(s, chunk, dw != nullptr).
template <class T>
void Conv2dGrad(const T* x, const T* w, const T* dy, T* dx, T* dw, const ConvGeometry& s,
                T* scratch, int64_t chunk, cudaStream_t stream);

}  // namespace rill::cuda
