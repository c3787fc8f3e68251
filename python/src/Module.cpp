// The _tessera extension: the C++ core's Python face. Each user error type
// becomes a Python exception that also derives from the built-in exception
// Python code would catch for it (ValueError for shapes, TypeError for
// types), so `except ValueError` works as it does with Keras.
#include "Bindings.hpp"

#include "tessera/ir/Module.hpp"
#include "tessera/nn/Model.hpp"
#include "tessera/support/Error.hpp"

namespace tessera::python {

namespace {

// A Python exception class named \p name deriving from \p bases, in \p m.
py::object exceptionClass(py::module_ &m, const char *name, py::tuple bases,
                          const char *doc) {
  py::dict ns;
  ns["__doc__"] = doc;
  ns["__module__"] = "tessera";
  py::object cls = py::reinterpret_borrow<py::object>(
      reinterpret_cast<PyObject *>(&PyType_Type))(name, bases, ns);
  m.attr(name) = cls;
  return cls;
}

// The Python class for C++ error type E (one per type, set once).
template <typename E> PyObject *&pythonClass() {
  static PyObject *cls = nullptr;
  return cls;
}

template <typename E> void translate(py::object cls) {
  // The reference is kept for the process: translators outlive modules.
  pythonClass<E>() = cls.release().ptr();
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p)
        std::rethrow_exception(p);
    } catch (const E &e) {
      PyErr_SetString(pythonClass<E>(), e.what());
    }
  });
}

} // namespace

void bindErrors(py::module_ &m) {
  py::object base = exceptionClass(
      m, "TesseraError", py::make_tuple(py::handle(PyExc_RuntimeError)),
      "Base of every error a Tessera user can cause and fix.");
  auto sub = [&](const char *name, PyObject *builtin, const char *doc) {
    return exceptionClass(m, name, py::make_tuple(base, py::handle(builtin)),
                          doc);
  };
  // Registered base first: pybind11 tries the latest translator first.
  translate<Error>(base);
  translate<OptionError>(
      sub("OptionError", PyExc_ValueError, "An unknown or invalid option."));
  translate<ShapeError>(sub("ShapeError", PyExc_ValueError,
                            "Shapes or element counts that do not fit."));
  translate<TypeError>(
      sub("TypeError", PyExc_TypeError, "Element types that do not fit."));
  translate<SerializationError>(
      sub("SerializationError", PyExc_ValueError,
          "A file that cannot be read: missing, truncated, of another "
          "model."));
  translate<UnsupportedError>(sub("UnsupportedError", PyExc_NotImplementedError,
                                  "A feature Tessera does not support."));
  translate<nn::ModelError>(sub("ModelError", PyExc_RuntimeError,
                                "A model used out of order (fit before "
                                "compile, no Input)."));
  translate<ir::IrError>(
      sub("IrError", PyExc_ValueError, "An invalid model IR."));
}

} // namespace tessera::python

PYBIND11_MODULE(_tessera, m) {
  m.doc() = "The compiled core of the tessera package (C++ via pybind11). "
            "Use tessera.keras, tessera.ipu, tessera.tf and tessera.data.";
  using namespace tessera::python;
  bindErrors(m);
  bindArrays(m);
  bindData(m);
  bindTf1(m);
  bindConfig(m);
  bindLayers(m);
  bindModels(m);
  bindPva(m);
}
