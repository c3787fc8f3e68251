// A vertex whose field is private: class members are private by default.
#include <poplar/Vertex.hpp>

class Hidden : public poplar::Vertex {
  float helper_ = 0;
  poplar::Input<float> in;

public:
  poplar::Output<float> out;
  bool compute() {
    *out = *in + helper_;
    return true;
  }
};
