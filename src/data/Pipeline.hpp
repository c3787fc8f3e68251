// The pipeline's internals: a Dataset holds a tree of immutable nodes, and
// an iteration builds the matching tree of iterators. Each node kind lives
// in the .cpp that defines its factory below.
#pragma once

#include "tessera/data/Dataset.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tessera::data::detail {

/// The state of one pass over a node.
class IteratorImpl {
public:
  virtual ~IteratorImpl() = default;
  /// Makes \p out the next element and returns true, or returns false at
  /// the end (and again on every later call). \p out arrives holding any
  /// earlier element; implementations reuse its buffers.
  virtual bool next(Element &out) = 0;
  /// Writes the next element's components straight to dst[c] (each the
  /// size of the node's spec, which has no anyDim) and returns true, or
  /// returns false at the end. Batching calls it to fill rows of a batch
  /// in place; sources override it to copy once instead of twice. The
  /// default reads into \p scratch and copies from there.
  virtual bool nextInto(std::byte *const *dst, Element &scratch);
};

/// One step of a pipeline description.
class DatasetNode {
public:
  DatasetNode(ElementSpec spec, Cardinality cardinality)
      : spec_(std::move(spec)), cardinality_(cardinality) {}
  virtual ~DatasetNode() = default;
  DatasetNode(const DatasetNode &) = delete;
  DatasetNode &operator=(const DatasetNode &) = delete;

  /// A new pass. The node outlives its iterators (Iterator holds the root).
  virtual std::unique_ptr<IteratorImpl> makeIterator() const = 0;

  const ElementSpec &spec() const { return spec_; }
  Cardinality cardinality() const { return cardinality_; }

  /// For in-memory sources, whose elements can be read in any order: how
  /// many there are. Nothing for the others.
  virtual std::optional<std::uint64_t> randomAccessCount() const {
    return std::nullopt;
  }
  /// Writes element \p index to dst[c], as nextInto. Only for nodes with a
  /// randomAccessCount().
  virtual void readElement(std::uint64_t index, std::byte *const *dst) const;

private:
  ElementSpec spec_;
  Cardinality cardinality_;
};

using NodePtr = std::shared_ptr<const DatasetNode>;

/// Whether every dimension of \p spec is known (no anyDim).
bool hasFixedShapes(const ElementSpec &spec);
/// Makes \p out an element of \p spec (fixed shapes) with unspecified
/// values, reusing its buffers.
void resetToSpec(const ElementSpec &spec, Element &out);

// Sources.cpp
NodePtr makeTensorSliceNode(std::vector<HostTensor> tensors,
                            const std::vector<std::string> &names);
NodePtr makeGeneratorNode(std::function<Dataset::Generator()> makeGenerator,
                          ElementSpec spec, Cardinality cardinality);

// Transforms.cpp
NodePtr makeMapNode(NodePtr input, Dataset::MapFn fn, ElementSpec outputSpec);
NodePtr makeCastNode(NodePtr input, std::size_t component, Type type);
NodePtr makeBatchNode(NodePtr input, std::size_t batchSize, bool dropRemainder);
NodePtr makeTakeNode(NodePtr input, std::uint64_t count);
NodePtr makeSkipNode(NodePtr input, std::uint64_t count);

// Shard.cpp
NodePtr makeShardNode(NodePtr input, std::uint64_t shards, std::uint64_t index,
                      std::uint64_t block);
/// Repeats \p input \p count times, or for ever when \p count is empty.
NodePtr makeRepeatNode(NodePtr input, std::optional<std::uint64_t> count);

// Shuffle.cpp
NodePtr makeShuffleNode(NodePtr input, std::size_t bufferSize,
                        std::uint64_t seed, bool reshuffleEachIteration);

// Parallel.cpp
/// map() on \p numWorkers threads, in input order.
NodePtr makeParallelMapNode(NodePtr input, Dataset::MapFn fn,
                            ElementSpec outputSpec, unsigned numWorkers);
NodePtr makePrefetchNode(NodePtr input, std::size_t depth);

} // namespace tessera::data::detail
