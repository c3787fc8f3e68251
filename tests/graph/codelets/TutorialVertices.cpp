// Vertex classes written the way Poplar's tutorials write them, several to a
// file so the codelet tests compile once. CodeletTest.cpp runs each of them.
#include <poplar/Vertex.hpp>

using namespace poplar;

/* Not a vertex: class Commented : public Vertex { Input<float> x; }; */
static const char *kNotAVertex = "class Quoted : public Vertex { };";

// The tutorial vertex: sums its input vector.
class SumVertex : public Vertex {
public:
  Input<Vector<float>> in;
  Output<float> out;

  bool compute() {
    *out = 0;
    for (const auto &v : in)
      *out += v;
    return true;
  }
};

// Runs on all six workers; each scales every sixth element.
class ScaleMulti : public MultiVertex {
public:
  InOut<Vector<float>> data;
  float scale;

  void compute(unsigned worker) {
    for (unsigned i = worker; i < data.size(); i += numWorkers())
      data[i] *= scale;
  }
};

// A list of vectors, and plain state of both kinds.
class RowSums : public poplar::Vertex {
public:
  Vector<Input<Vector<float>>> rows;
  Output<Vector<float>> sums;
  Vector<unsigned> order;
  float bias;
  static constexpr unsigned kUnused = 3;
  using Element = float;

  RowSums() = default;
  bool compute() {
    for (unsigned r = 0; r < rows.size(); ++r) {
      float s = bias;
      for (float v : rows[order[r]])
        s += v;
      sums[r] = s;
    }
    return true;
  }

private:
  float scratch_ = 0;
};

namespace demo {
namespace inner {
// A struct's members are public without an access specifier.
struct Axpy : Vertex {
  Input<Vector<half>> x;
  InOut<Vector<float>> y;
  Input<float> a;

  bool compute() {
    for (unsigned i = 0; i < y.size(); ++i)
      y[i] += *a * static_cast<float>(x[i]);
    return true;
  }
};
} // namespace inner
} // namespace demo

// A vertex template, registered through its explicit instantiations.
template <typename T> class Fill : public Vertex {
public:
  Output<Vector<T>> out;
  T value;

  bool compute() {
    for (T &o : out)
      o = value;
    return true;
  }
};
template class Fill<float>;
template class Fill<int>;

// A vertex derived from another keeps the base's fields first.
class ScaledSum : public SumVertex {
public:
  Input<float> factor;

  bool compute() {
    SumVertex::compute();
    *out = *out * factor;
    return kNotAVertex != nullptr;
  }
};

#ifdef __IPU__
// The device version is never compiled for the IPU Model.
class SumVertex : public Vertex {
public:
  Input<Vector<float>> in;
  Output<float> out;
  bool compute() { asm volatile("# device code"); return true; }
};
#endif
