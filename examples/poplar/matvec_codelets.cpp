// The codelet of matvec.cpp: one row of a matrix-vector product.

#include <poplar/Vertex.hpp>

using namespace poplar;

class DotProductVertex : public Vertex {
public:
  Input<Vector<float>> row;
  Input<Vector<float>> x;
  Output<float> out;

  bool compute() {
    // One fused multiply-add per element, in index order. Written out with
    // std::fma rather than `sum += row[i] * x[i]`, which a compiler may or
    // may not fuse depending on its flags; matvec.cpp's host reference
    // repeats exactly these operations, so the results agree bit for bit.
    float sum = 0;
    for (unsigned i = 0; i < row.size(); ++i)
      sum = std::fma(row[i], x[i], sum);
    *out = sum;
    return true;
  }
};
