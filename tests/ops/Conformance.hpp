// The ops conformance harness (DESIGN.md section 10, item 6): one table of
// rows, one row per op, each building its op on a graph for a target of a
// given tile count and saying what the outputs must be. ConformanceTest.cpp
// runs every row as gtest cases: forward rows against the host reference in
// each element type the op takes on 1, 4 and 1472 tiles, gradient rows
// against central finite differences of the forward reference, and the
// cycle estimates of every row (positive, the same on two compiles, larger
// for a larger size). Inputs are written from the host into variables
// mapped linearly (one element a tile on 1472 tiles), which the op sees
// through reversed views on 4 tiles. The rows live in Conformance*Rows.cpp,
// one file per op family; this header has what they share.
#pragma once

#include "tessera/graph/Graph.hpp"
#include "tessera/graph/Program.hpp"
#include "tessera/ops/Reference.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tessera::conformance {

using Shape = std::vector<std::size_t>;
using Values = std::vector<double>;

/// Host data for one input of an op: its type, shape and values, the same
/// on every replica (one entry) or one entry per replica.
struct HostInput {
  Type type = FLOAT;
  Shape shape;
  std::vector<Values> replicas;
  HostInput(Type type, Shape shape, Values values)
      : type(type), shape(std::move(shape)), replicas{std::move(values)} {}
  HostInput(Type type, Shape shape, std::vector<Values> perReplica)
      : type(type), shape(std::move(shape)), replicas(std::move(perReplica)) {}
};

/// Builds the op on \p graph from its inputs (variables mapped linearly and
/// written from the host) and returns the tensors to check.
using Builder = std::function<std::vector<Tensor>(
    Graph &graph, const std::vector<Tensor> &inputs, program::Sequence &prog)>;

/// The machine an op runs on: one ipu2 of \p tiles tiles per replica.
struct Machine {
  unsigned tiles = 4;
  unsigned replicas = 1;
};

/// What one output must hold: per replica (one entry: every replica), each
/// element within tolerance * max(1, scale) of the value, where scale is
/// the element's entry of \p scale or, when that is empty, |value|.
/// Tolerance 0 asks for exact equality; NaN expects NaN.
struct Expected {
  std::vector<Values> replicas;
  double tolerance = 0;
  Values scale;
  Expected(Values values, double tolerance, Values scale = {})
      : replicas{std::move(values)}, tolerance(tolerance),
        scale(std::move(scale)) {}
  Expected(std::vector<Values> perReplica, double tolerance)
      : replicas(std::move(perReplica)), tolerance(tolerance) {}
};

/// The outputs of a run: outputs[k][r] is output k on replica r.
struct Outcome {
  std::vector<std::vector<Values>> outputs;
};

/// One op on one machine: its inputs, how to build it and what to expect.
/// \p check, when set, runs after the comparisons (statistics of random
/// ops, properties no reference value states).
struct OpCase {
  unsigned replicas = 1;
  std::vector<HostInput> inputs;
  Builder build;
  std::vector<Expected> expected;
  std::function<void(const Outcome &)> check;
};

/// Forward rows compare with the host reference; gradient rows with finite
/// differences of the forward reference.
enum class Kind { Forward, Gradient };

/// A row: an op (or op variant) and the element types it takes. make()
/// gives the case for one type and tile count; \p size (1 or 2) scales the
/// problem, so the estimate check can compare two sizes. Every row gets an
/// estimate check too.
struct Row {
  std::string name;
  Kind kind = Kind::Forward;
  std::vector<Type> types;
  std::function<OpCase(Type type, unsigned tiles, unsigned size)> make;
};

// ---- Running ------------------------------------------------------------

/// Builds \p c on \p m, runs it once on the IPU Model, reads the outputs.
Outcome runCase(const Machine &m, const OpCase &c);
/// Compiles \p c on \p m without running it: each step's estimated cycles
/// (the slowest IPU's).
std::vector<std::uint64_t> stepEstimates(const Machine &m, const OpCase &c);

// ---- Helpers for rows ---------------------------------------------------

/// Values in [lo, hi) spread deterministically, never exactly on a
/// multiple of 1/2 or within 1/100 of one (away from the kinks and jumps
/// of abs, relu, floor, round, ...).
Values spread(std::size_t n, double lo, double hi, unsigned salt = 0);
/// Values as stored in \p type (half: nearest even; integers: truncated).
Values rounded(Type type, Values v);
std::size_t product(const Shape &shape);
/// Elementwise |v|.
Values absolute(Values v);
/// A type's tolerance: \p f for FLOAT, \p h for HALF, 0 for the others.
double tol(Type type, double f, double h);
/// The gradient of \p loss at \p x by central differences in double.
Values finiteDifference(const Values &x,
                        const std::function<double(const Values &)> &loss,
                        double h = 1e-5);
/// sum(w * v).
double dot(const Values &w, const Values &v);
/// The name of a type in case names: "float", "half", "int", ...
std::string typeLabel(Type type);

// ---- The rows, by family ------------------------------------------------

std::vector<Row> elementwiseRows();
std::vector<Row> elementwiseGradientRows();
std::vector<Row> miscElementwiseRows();
std::vector<Row> reduceRows();
std::vector<Row> matMulRows();
std::vector<Row> convRows();
std::vector<Row> poolRows();
std::vector<Row> nonLinearityRows();
std::vector<Row> lossRows();
std::vector<Row> normRows();
std::vector<Row> randomRows();
std::vector<Row> sliceRows();
std::vector<Row> collectiveRows();

} // namespace tessera::conformance
