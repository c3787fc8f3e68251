// Loads the executable tutorial.cpp saved and runs it with new inputs. This
// program never calls addCodelets: the executable brings the code of its
// vertices (the custom AxpyVertex and popops' own).
#include <poplar/Engine.hpp>
#include <poplar/IPUModel.hpp>

#include <cmath>
#include <fstream>
#include <iostream>
#include <vector>

using namespace poplar;

int main() {
  std::ifstream file("tutorial.exe", std::ios::binary);
  if (!file) {
    std::cout << "FAILED: run ./tutorial first to write tutorial.exe\n";
    return 1;
  }
  IPUModel ipuModel;
  Device device = ipuModel.createDevice();
  Engine engine(Executable::deserialize(file));
  engine.load(device);

  const unsigned n = 16;
  std::vector<float> hx(n), hy(n), out(n);
  for (unsigned i = 0; i < n; ++i) {
    hx[i] = 0.5f * static_cast<float>(i);
    hy[i] = 3.0f - static_cast<float>(i);
  }
  engine.writeTensor("x-write", hx.data(), hx.data() + n);
  engine.writeTensor("y-write", hy.data(), hy.data() + n);
  engine.run(0);
  float total = 0;
  engine.readTensor("y-read", out.data(), out.data() + n);
  engine.readTensor("sum-read", &total, &total + 1);

  float expectTotal = 0;
  int failures = 0;
  for (unsigned i = 0; i < n; ++i) {
    float expect = (2 * hx[i] + hy[i]) * hx[i];
    expectTotal += expect;
    if (std::fabs(out[i] - expect) > 1e-4f) {
      std::cout << "y[" << i << "] = " << out[i] << ", expected " << expect
                << "\n";
      ++failures;
    }
  }
  if (std::fabs(total - expectTotal) > 1e-3f * std::fabs(expectTotal)) {
    std::cout << "sum = " << total << ", expected " << expectTotal << "\n";
    ++failures;
  }
  std::cout << (failures ? "FAILED" : "PASSED")
            << " (loaded executable): sum = " << total << "\n";
  return failures ? 1 : 0;
}
