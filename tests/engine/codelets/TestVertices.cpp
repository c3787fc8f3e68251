// Vertices the engine and compiler tests run: small, one of each field form.
#include <poplar/Vertex.hpp>

using namespace poplar;

class SumVertex : public Vertex {
public:
  Input<Vector<float>> in;
  Output<float> out;
  bool compute() {
    float s = 0;
    for (float v : in)
      s += v;
    *out = s;
    return true;
  }
};

class AddOneVertex : public Vertex {
public:
  InOut<Vector<float>> x;
  void compute() {
    for (auto &v : x)
      v += 1.0f;
  }
};

class ScaleVertex : public Vertex {
public:
  Input<Vector<float>> in;
  Output<Vector<float>> out;
  float scale;
  bool compute() {
    for (unsigned i = 0; i < in.size(); ++i)
      out[i] = in[i] * scale;
    return true;
  }
};

class ConcatSumVertex : public Vertex {
public:
  Vector<Input<Vector<float>>> parts;
  Output<Vector<float>> out;
  bool compute() {
    for (unsigned i = 0; i < parts.size(); ++i) {
      float s = 0;
      for (float v : parts[i])
        s += v;
      out[i] = s;
    }
    return true;
  }
};

class WorkerIdVertex : public MultiVertex {
public:
  Output<Vector<int>> out;
  void compute(unsigned worker) { out[worker] = static_cast<int>(worker) * 10; }
};

class FailVertex : public Vertex {
public:
  Input<float> in;
  bool compute() { return in < 0; }
};

class CountDownVertex : public Vertex {
public:
  InOut<int> counter;
  Output<bool> more;
  bool compute() {
    *counter = counter - 1;
    *more = counter > 0;
    return true;
  }
};

class EmptyVertex : public Vertex {
public:
  bool compute() { return true; }
};
