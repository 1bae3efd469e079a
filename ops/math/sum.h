// The frame of sum, shared by its CPU kernel (sum_op.cc) and its CUDA kernel
// (reduce_op_cuda.cc): the checks, their order and their messages, the input
// pointers read before Out is allocated, and which input Out is.
#pragma once

#include <vector>

#include "rill/kernel_context.h"

namespace rill {

// Checks that every X has the shape and type of X[0], allocates Out like it
// on `place` and calls body(xs, in_place, out, n): xs the inputs' pointers
// (read before Out is allocated: Out may be one of them), in_place the index
// of the input Out is (-1 if none; pointers compared, never read). Every
// data type.
template <class Body>
void SumFrame(KernelContext& ctx, Place place, Body body) {
  const int count = ctx.InputCount("X");
  const Tensor& first = ctx.Input("X", 0);
  for (int i = 1; i < count; ++i) {
    const Tensor& x = ctx.Input("X", i);
    RILL_CHECK(x.shape() == first.shape() && x.dtype() == first.dtype(), kInvalidArgument, "input ",
               i, " (", ctx.InputName("X", i), ") is ", x.Describe(), " but input 0 (",
               ctx.InputName("X", 0), ") is ", first.Describe());
  }
  Tensor* out_t = ctx.Output("Out");
  VisitDataType(first.dtype(), [&]<class T>() {
    std::vector<const T*> xs;
    for (int i = 0; i < count; ++i) xs.push_back(ctx.Input("X", i).data<T>());
    const Shape shape = first.shape();
    const int64_t n = first.numel();
    out_t->Allocate(DataTypeOf<T>(), shape, place);
    T* out = out_t->mutable_data<T>();
    int in_place = -1;
    for (int i = 0; i < count; ++i) {
      if (xs[i] == out) in_place = i;
    }
    body(xs, in_place, out, n);
  });
}

}  // namespace rill
