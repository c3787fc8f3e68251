// tessera.data.Dataset over data::Dataset. Python map functions run on the
// pipeline's threads holding the GIL only while they run; elements cross
// as NumPy arrays that own the element's tensors.
#include "Bindings.hpp"

#include "tessera/data/Benchmark.hpp"
#include "tessera/data/Dataset.hpp"
#include "tessera/data/Idx.hpp"

#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <memory>

namespace tessera::python {

namespace {

// A Python object that C++ threads may hold and drop without the GIL.
struct SharedPyObject {
  py::object object;
  explicit SharedPyObject(py::object o) : object(std::move(o)) {}
  ~SharedPyObject() {
    if (Py_IsInitialized()) {
      py::gil_scoped_acquire gil;
      object = py::object();
    } else {
      object.release(); // the interpreter is gone: nothing left to free
    }
  }
};

py::tuple toTuple(data::Element e) {
  py::tuple t(e.size());
  for (std::size_t i = 0; i < e.size(); ++i)
    t[i] = toNumpy(std::move(e.components[i]));
  return t;
}

// A map function's result as components: a tuple or list of arrays, or one
// array. \p types converts them (the spec's types; none for the probe).
data::Element fromResult(const py::object &r,
                         const std::vector<std::optional<Type>> &types) {
  std::vector<py::object> parts;
  if (py::isinstance<py::tuple>(r) || py::isinstance<py::list>(r))
    for (py::handle h : r)
      parts.push_back(py::reinterpret_borrow<py::object>(h));
  else
    parts.push_back(r);
  if (!types.empty() && parts.size() != types.size())
    throw ShapeError(
        "map: the function returned " + std::to_string(parts.size()) +
        " components where it first returned " + std::to_string(types.size()));
  data::Element e;
  for (std::size_t i = 0; i < parts.size(); ++i)
    e.components.push_back(toHostTensor(parts[i],
                                        types.empty() ? std::nullopt : types[i],
                                        "map: component " + std::to_string(i)));
  return e;
}

py::object call(const py::object &fn, data::Element e) {
  py::tuple args = toTuple(std::move(e));
  return fn(*args);
}

// The output spec of \p fn, found by calling it once on zeros of the input
// spec (as TensorFlow traces a map function once). A varying dimension is
// probed as 1 and stays varying where the output keeps its place.
data::ElementSpec probeSpec(const py::object &fn, const data::ElementSpec &in) {
  data::Element zeros;
  for (const auto &c : in.components()) {
    data::Shape s = c.shape;
    for (auto &d : s)
      d = d == data::anyDim ? 1 : d;
    zeros.components.emplace_back(c.type, s);
  }
  const data::Element out = fromResult(call(fn, std::move(zeros)), {});
  const bool varying =
      in.size() > 0 && !in[0].shape.empty() && in[0].shape[0] == data::anyDim;
  std::vector<data::ComponentSpec> comps;
  for (std::size_t i = 0; i < out.size(); ++i) {
    data::Shape s = out[i].shape();
    if (varying && !s.empty() && s[0] == 1)
      s[0] = data::anyDim;
    comps.push_back({i < in.size() ? in[i].name : "", out[i].type(), s});
  }
  return data::ElementSpec(comps);
}

data::Dataset mapPython(const data::Dataset &d, py::object fn,
                        std::size_t parallel) {
  data::ElementSpec spec = probeSpec(fn, d.spec());
  std::vector<std::optional<Type>> types;
  for (const auto &c : spec.components())
    types.push_back(c.type);
  auto shared = std::make_shared<SharedPyObject>(std::move(fn));
  return d.map(
      [shared, types](data::Element e) {
        py::gil_scoped_acquire gil;
        return fromResult(call(shared->object, std::move(e)), types);
      },
      spec, parallel);
}

// An iteration Python holds. Destroying it joins the pipeline's worker
// threads, which may be waiting for the GIL to run a map function: it is
// released meanwhile.
struct PythonIterator {
  std::unique_ptr<data::Iterator> iterator;
  explicit PythonIterator(std::unique_ptr<data::Iterator> it)
      : iterator(std::move(it)) {}
  PythonIterator(PythonIterator &&) = default;
  ~PythonIterator() {
    if (iterator && PyGILState_Check()) {
      py::gil_scoped_release nogil;
      iterator.reset();
    }
  }
};

py::list specList(const data::ElementSpec &spec) {
  py::list l;
  for (const auto &c : spec.components()) {
    py::list dims;
    for (std::size_t d : c.shape)
      dims.append(d == data::anyDim ? py::object(py::none())
                                    : py::object(py::int_(d)));
    l.append(py::make_tuple(c.name, dtypeOf(c.type), py::tuple(dims)));
  }
  return l;
}

} // namespace

void bindData(py::module_ &m) {
  py::class_<PythonIterator>(m, "Iterator")
      .def("__iter__", [](py::object self) { return self; })
      .def("__next__", [](PythonIterator &it) {
        std::optional<data::Element> e;
        {
          py::gil_scoped_release nogil;
          e = it.iterator->next();
        }
        if (!e)
          throw py::stop_iteration();
        return toTuple(std::move(*e));
      });

  py::class_<data::Dataset>(m, "Dataset", R"doc(
An input pipeline in C++ (tessera::data::Dataset): each method returns a new
dataset. Iterating yields tuples of NumPy arrays. See tessera.data.Dataset
for the tf.data-shaped wrapper.)doc")
      .def_static(
          "from_tensors",
          [](const py::list &arrays, std::vector<std::string> names) {
            std::vector<data::HostTensor> ts;
            for (std::size_t i = 0; i < arrays.size(); ++i)
              ts.push_back(toHostTensor(arrays[i], std::nullopt,
                                        "from_tensor_slices: component " +
                                            std::to_string(i)));
            return data::Dataset::fromTensors(std::move(ts), names);
          },
          py::arg("arrays"), py::arg("names") = std::vector<std::string>{},
          "The slices of `arrays` along their first dimension.")
      .def_static(
          "from_host_tensors",
          [](std::vector<data::HostTensor *> ts) {
            std::vector<data::HostTensor> moved;
            for (auto *t : ts)
              moved.push_back(std::move(*t));
            return data::Dataset::fromTensors(std::move(moved));
          },
          "As from_tensors, taking over converted HostTensors (no copy).")
      .def("batch", &data::Dataset::batch, py::arg("batch_size"),
           py::arg("drop_remainder") = false)
      .def("shuffle", &data::Dataset::shuffle, py::arg("buffer_size"),
           py::arg("seed") = 0, py::arg("reshuffle_each_iteration") = true)
      .def(
          "repeat",
          [](const data::Dataset &d, std::optional<std::int64_t> count) {
            return count && *count >= 0 ? d.repeat(std::uint64_t(*count))
                                        : d.repeat();
          },
          py::arg("count") = py::none())
      .def("take", &data::Dataset::take)
      .def("skip", &data::Dataset::skip)
      .def(
          "prefetch",
          [](const data::Dataset &d, std::optional<std::size_t> depth) {
            return d.prefetch(depth ? *depth : data::autotune);
          },
          py::arg("depth") = py::none())
      .def("cast",
           [](const data::Dataset &d, std::size_t component,
              const std::string &dtype) {
             return d.cast(component, typeOfName(dtype));
           })
      .def("map", &mapPython, py::arg("fn"), py::arg("num_parallel_calls") = 1,
           "Applies `fn(*components)` (NumPy arrays in, arrays out) to each "
           "element on the pipeline's thread.")
      .def_property_readonly(
          "spec", [](const data::Dataset &d) { return specList(d.spec()); },
          "[(name, dtype, shape)] per component; None for a varying "
          "dimension.")
      .def_property_readonly(
          "cardinality",
          [](const data::Dataset &d) -> std::int64_t {
            const data::Cardinality c = d.cardinality();
            return c.isFinite()     ? std::int64_t(c.count())
                   : c.isInfinite() ? -1
                                    : -2;
          },
          "The element count; -1 infinite, -2 unknown (as tf.data).")
      .def("__iter__", [](const data::Dataset &d) {
        return PythonIterator{std::make_unique<data::Iterator>(d.iterator())};
      });

  m.def(
      "read_idx",
      [](const std::string &path) {
        data::HostTensor t;
        {
          py::gil_scoped_release nogil;
          t = data::readIdxTensor(path);
        }
        return toNumpy(std::move(t));
      },
      py::arg("path"),
      "The array in an IDX file (gzip or plain), in the file's element "
      "type.");
  m.def(
      "dataset_benchmark",
      [](const data::Dataset &d, std::size_t epochs, std::size_t elements) {
        py::gil_scoped_release nogil;
        return data::datasetBenchmark(d, epochs, elements).dump();
      },
      py::arg("dataset"), py::arg("epochs"), py::arg("elements_per_epoch"),
      "Reads `epochs` x `elements_per_epoch` elements and returns JSON: "
      "per epoch elements_processed, total_bytes_processed, time_elapsed, "
      "elements_per_second, bandwidth.");
  m.def("fashion_mnist_directory", &data::fashionMnistDirectory,
        "Where Debian's dataset-fashion-mnist puts the files "
        "(TESSERA_FASHION_MNIST_DIR overrides it).");
}

} // namespace tessera::python
