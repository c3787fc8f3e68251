// NumPy arrays <-> HostTensor: one copy in (numpy.copyto into the tensor's
// storage, which handles strides and dtype conversion in one pass), none
// out (the array takes over the tensor's storage).
#include "Bindings.hpp"

#include "tessera/support/Error.hpp"

#include <streambuf>
#include <vector>

namespace tessera::python {

py::dtype dtypeOf(Type type) {
  switch (type) {
  case Type::FLOAT:
    return py::dtype("float32");
  case Type::HALF:
    return py::dtype("float16");
  case Type::INT:
    return py::dtype("int32");
  case Type::UNSIGNED_INT:
    return py::dtype("uint32");
  case Type::SHORT:
    return py::dtype("int16");
  case Type::UNSIGNED_SHORT:
    return py::dtype("uint16");
  case Type::CHAR:
  case Type::SIGNED_CHAR:
    return py::dtype("int8");
  case Type::UNSIGNED_CHAR:
    return py::dtype("uint8");
  case Type::BOOL:
    return py::dtype("bool");
  }
  TESSERA_INTERNAL_ASSERT(false);
  return py::dtype("float32");
}

std::optional<Type> typeOfDtype(const py::dtype &dtype) {
  const char kind = dtype.kind();
  const auto size = dtype.itemsize();
  if (kind == 'f')
    return size == 2 ? Type::HALF : Type::FLOAT;
  if (kind == 'i')
    return size == 1 ? Type::SIGNED_CHAR : size == 2 ? Type::SHORT : Type::INT;
  if (kind == 'u')
    return size == 1   ? Type::UNSIGNED_CHAR
           : size == 2 ? Type::UNSIGNED_SHORT
                       : Type::UNSIGNED_INT;
  if (kind == 'b')
    return Type::BOOL;
  return std::nullopt;
}

Type typeOfName(const std::string &name) {
  const std::optional<Type> t = typeOfDtype(py::dtype(name));
  if (!t)
    throw TypeError("dtype \"" + name +
                    "\" is not numeric; use float32, int32 or uint8");
  return *t;
}

data::HostTensor toHostTensor(const py::handle &obj, std::optional<Type> type,
                              const std::string &what) {
  py::array a = py::array::ensure(obj);
  if (!a)
    throw TypeError(what +
                    ": expected a NumPy array (or something "
                    "numpy.asarray takes), got " +
                    std::string(py::str(py::type::handle_of(obj))));
  const std::optional<Type> own = typeOfDtype(a.dtype());
  if (!own)
    throw TypeError(what + ": the array's dtype is " +
                    std::string(py::str(a.dtype())) +
                    ", which is not a number type; give float32 or int32 "
                    "values");
  const Type t = type ? *type : *own;
  data::Shape shape(a.shape(), a.shape() + a.ndim());
  data::HostTensor out(t, shape);
  if (out.numElements() == 0)
    return out;
  // A view of the tensor's storage (base: None, so NumPy does not copy it)
  // that numpy.copyto fills.
  std::vector<py::ssize_t> dims(a.shape(), a.shape() + a.ndim());
  py::array view(dtypeOf(t), dims, {}, out.data(), py::none());
  py::module_::import("numpy").attr("copyto")(view, a,
                                              py::arg("casting") = "unsafe");
  return out;
}

py::array toNumpy(data::HostTensor t) {
  auto *owner = new data::HostTensor(std::move(t));
  py::capsule free(owner,
                   [](void *p) { delete static_cast<data::HostTensor *>(p); });
  std::vector<py::ssize_t> dims(owner->shape().begin(), owner->shape().end());
  if (owner->numElements() == 0)
    return py::array(dtypeOf(owner->type()), dims);
  return py::array(dtypeOf(owner->type()), dims, {}, owner->data(), free);
}

namespace {

// Buffers a line (or a '\r' redraw) and hands it to sys.<name>.write with
// the GIL held; C++ progress output comes from threads that released it.
class PythonStreamBuf : public std::streambuf {
public:
  explicit PythonStreamBuf(const char *name) : name_(name) {}

protected:
  int overflow(int c) override {
    if (c != EOF) {
      buffer_.push_back(char(c));
      if (c == '\n' || buffer_.size() > 4096)
        flush();
    }
    return c;
  }
  int sync() override {
    flush();
    return 0;
  }

private:
  void flush() {
    if (buffer_.empty())
      return;
    py::gil_scoped_acquire gil;
    py::object stream = py::module_::import("sys").attr(name_);
    if (!stream.is_none()) {
      stream.attr("write")(buffer_);
      stream.attr("flush")();
    }
    buffer_.clear();
  }
  const char *name_;
  std::string buffer_;
};

} // namespace

std::ostream &pythonStream(const char *name) {
  // Never destroyed: C++ code may print while the interpreter shuts down.
  static std::ostream *out = new std::ostream(new PythonStreamBuf("stdout"));
  static std::ostream *err = new std::ostream(new PythonStreamBuf("stderr"));
  return std::string(name) == "stderr" ? *err : *out;
}

void bindArrays(py::module_ &m) {
  py::class_<data::HostTensor>(m, "HostTensor", R"doc(
An array in Tessera's host memory (64-byte aligned, row-major). The Python
layer converts each NumPy argument into one of these once, and hands
results back as NumPy arrays that own the tensor's storage (no copy).)doc")
      .def_static(
          "from_array",
          [](const py::handle &a, std::optional<std::string> dtype,
             const std::string &what) {
            std::optional<Type> t;
            if (dtype)
              t = typeOfName(*dtype);
            return toHostTensor(a, t, what);
          },
          py::arg("array"), py::arg("dtype") = py::none(),
          py::arg("what") = "array",
          "Copies `array` (any strides) converted to `dtype` (e.g. "
          "'float32'; its own type when None).")
      .def_property_readonly("shape",
                             [](const data::HostTensor &t) {
                               py::tuple s(t.rank());
                               for (std::size_t i = 0; i < t.rank(); ++i)
                                 s[i] = t.shape()[i];
                               return s;
                             })
      .def_property_readonly(
          "dtype", [](const data::HostTensor &t) { return dtypeOf(t.type()); })
      .def(
          "numpy",
          [](py::object self) {
            auto &t = self.cast<data::HostTensor &>();
            std::vector<py::ssize_t> dims(t.shape().begin(), t.shape().end());
            if (t.numElements() == 0)
              return py::array(dtypeOf(t.type()), dims);
            return py::array(dtypeOf(t.type()), dims, {}, t.data(), self);
          },
          "A NumPy view of the tensor (no copy; it keeps the tensor alive).");
}

} // namespace tessera::python
