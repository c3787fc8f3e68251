// Helper code without any vertex class.
#include <poplar/Vertex.hpp>

struct NotAVertex {
  poplar::Input<float> in;
};

inline float twice(float x) { return 2 * x; }
