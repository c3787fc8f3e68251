// What the binding files share: NumPy conversion at the boundary, Python
// streams for C++ progress output, and the per-file registration functions
// Module.cpp calls.
#pragma once

#include "tessera/data/HostTensor.hpp"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <ostream>
#include <string>

namespace tessera::python {

namespace py = pybind11;

/// The NumPy dtype of an element type.
py::dtype dtypeOf(Type type);
/// The element type a NumPy array of \p dtype becomes: float64 becomes
/// FLOAT and int64 INT (the IPU has no 64-bit types); nullopt for dtypes
/// with no numeric meaning (objects, strings, complex numbers).
std::optional<Type> typeOfDtype(const py::dtype &dtype);
/// The element type named \p name ("float32", "int32", "uint8", ...).
Type typeOfName(const std::string &name);

/// Copies \p obj (an array of any strides, or anything np.asarray takes)
/// into a new HostTensor of element type \p type (its own type when
/// nullopt), converting in the same pass: the one copy on the way in.
/// Throws TypeError starting with \p what for non-numeric arrays.
data::HostTensor toHostTensor(const py::handle &obj, std::optional<Type> type,
                              const std::string &what);
/// A NumPy array that takes over \p t's storage: no copy on the way out.
py::array toNumpy(data::HostTensor t);

/// A stream whose text goes to Python's sys.<name> (taking the GIL to
/// write), so progress lines reach Jupyter and pytest's capture too.
/// Lives for the whole process.
std::ostream &pythonStream(const char *name);

void bindErrors(py::module_ &m);
void bindArrays(py::module_ &m);
void bindTf1(py::module_ &m);
void bindData(py::module_ &m);
void bindLayers(py::module_ &m);
void bindModels(py::module_ &m);
void bindConfig(py::module_ &m);
void bindPva(py::module_ &parent);

} // namespace tessera::python
