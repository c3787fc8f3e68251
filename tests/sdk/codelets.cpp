// The project's vertex: y[i] = a * x[i] + y[i] over its slice.
#include <poplar/Vertex.hpp>

using namespace poplar;

class AxpyVertex : public Vertex {
public:
  Input<Vector<float>> x;
  InOut<Vector<float>> y;
  float a;

  bool compute() {
    for (unsigned i = 0; i < x.size(); ++i)
      y[i] += a * x[i];
    return true;
  }
};
