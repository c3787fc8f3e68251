/// \file
/// Keras' mixed-precision dtype policies for nn layers:
///
/// \code
///   nn::setGlobalPolicy("mixed_float16");   // layers made from now on
///   nn::Sequential model({nn::Input({32, 32, 3}),
///                         nn::Conv2D(16, {3, 3}, "relu"), nn::Flatten(),
///                         nn::Dense(10, "softmax")});
///   model.layers()[3]->setDtypePolicy(nn::Policy("float32"));
/// \endcode
///
/// A policy names the type a layer computes in and the type of its
/// variables:
///
///   name            compute   variables
///   float32         float     float
///   mixed_float16   half      float   (cast to half where the layer reads
///                                      them; the optimizer updates float)
///   float16         half      half
///
/// A layer takes the global policy when it is made (as Keras layers do)
/// unless setDtypePolicy() gives it another. Layers cast floating inputs
/// to their compute type (Keras' autocasting); integer inputs (token ids)
/// stay as they are. Normalisation layers compute their statistics in
/// float whatever the policy, as Keras' do, and return the compute type.
/// The model's outputs are cast to float, so losses, metrics and predict()
/// are float. compile() turns on dynamic loss scaling when some layer
/// computes in half (nn::CompileOptions::lossScale).
#pragma once

#include "tessera/support/Type.hpp"

#include <string>

namespace tessera::nn {

class Policy {
public:
  /// "float32", "float16" or "mixed_float16"; OptionError (with a "did you
  /// mean" hint and the names) for another.
  explicit Policy(const std::string &name = "float32");
  /// Keras' names: "float32", ...
  const std::string &name() const { return name_; }
  /// The type the layer computes in (FLOAT or HALF).
  Type computeDtype() const { return compute_; }
  /// The type of the layer's variables (FLOAT or HALF).
  Type variableDtype() const { return variable_; }
  bool operator==(const Policy &o) const { return name_ == o.name_; }

private:
  std::string name_;
  Type compute_ = FLOAT, variable_ = FLOAT;
};

/// The policy layers made from now on take (Keras'
/// mixed_precision.set_global_policy); "float32" at the start. Layers
/// already made keep theirs.
void setGlobalPolicy(const Policy &policy);
void setGlobalPolicy(const std::string &name);
Policy globalPolicy();

} // namespace tessera::nn
