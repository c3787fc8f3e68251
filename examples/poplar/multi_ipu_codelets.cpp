// The codelet of multi_ipu.cpp: elementwise in + bias.

#include <poplar/Vertex.hpp>

using namespace poplar;

class AddVertex : public Vertex {
public:
  Input<Vector<float>> in;
  Input<Vector<float>> bias;
  Output<Vector<float>> out;

  bool compute() {
    for (unsigned i = 0; i < out.size(); ++i)
      out[i] = in[i] + bias[i];
    return true;
  }
};
