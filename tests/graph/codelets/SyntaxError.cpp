// A codelet with a missing semicolon: the compiler's diagnostics must reach
// the user verbatim.
#include <poplar/Vertex.hpp>

class Broken : public poplar::Vertex {
public:
  poplar::Output<float> out;

  bool compute() {
    *out = 1.0f
    return true;
  }
};
