// What the two translation units of the Python module (rill._core) share:
// the binders each defines, and the conversions between numpy arrays and
// tensors. Everything here runs with the GIL held.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>

#include "rill/rill.h"

namespace rill::python {

namespace py = pybind11;

// Programs, the builder, backward and optimizers, program files (module.cc).
void BindPrograms(py::module_& module);
// Scope, Executor and ParallelExecutor (executors.cc).
void BindExecutors(py::module_& module);
// Tracing, trace files, plugins and datasets (tools.cc).
void BindTools(py::module_& module);

// How a tensor made from an array holds its elements.
enum class ArrayUse {
  kCopy,   // a copy of its own
  kShare,  // the array's memory where it is C-contiguous and aligned (a feed)
};
// A tensor of `array`'s elements, for feed (or variable) `name`: copied, or
// with kShare viewing the array's memory without a copy where the array is
// C-contiguous and aligned (else viewing a C-contiguous copy numpy makes). A
// shared array is referenced until no tensor views it. Throws
// kInvalidArgument naming the feed when numpy's dtype has no Rill type.
Tensor TensorFromArray(const std::string& name, const py::array& array,
                       ArrayUse use = ArrayUse::kCopy);
// Gives back the references of shared arrays that no tensor views any more.
// A tensor may be dropped on any thread, with or without the GIL, so its
// release only queues the array; this, called with the GIL before and after
// each step, drops the queued references.
void ReleaseFedArrays();
// A numpy array owning a copy of `tensor`'s elements (device tensors are
// copied to the host first), so it stays valid whatever the executor does next.
py::array ArrayFromTensor(const Tensor& tensor);

}  // namespace rill::python
