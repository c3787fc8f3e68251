// The codelet of codelets.cpp and executable.cpp: a vertex that sums its
// input vector into one output element.

#include <poplar/Vertex.hpp>

using namespace poplar;

class SumVertex : public Vertex {
public:
  Input<Vector<float>> in;
  Output<float> out;

  bool compute() {
    float sum = 0;
    for (unsigned i = 0; i < in.size(); ++i)
      sum += in[i];
    *out = sum;
    return true;
  }
};
