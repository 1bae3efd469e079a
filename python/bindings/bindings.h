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

// A tensor holding a copy of `array`'s elements, for feed `name`. Throws
// kInvalidArgument naming the feed when numpy's dtype has no Rill type.
Tensor TensorFromArray(const std::string& name, const py::array& array);
// A numpy array owning a copy of `tensor`'s elements (device tensors are
// copied to the host first), so it stays valid whatever the executor does next.
py::array ArrayFromTensor(const Tensor& tensor);

}  // namespace rill::python
