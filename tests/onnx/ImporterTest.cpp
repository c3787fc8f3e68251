#include "tessera/onnx/Importer.hpp"
#include <gtest/gtest.h>
TEST(OnnxImporter, ListsSupportedOperators) {
  EXPECT_FALSE(tessera::onnx::supportedOperators().empty());
}
