// The public Dataset and Iterator: argument checks, then the node factories
// of the other files.
#include "Pipeline.hpp"

#include <algorithm>
#include <cstring>
#include <thread>

namespace tessera::data {
namespace detail {

bool IteratorImpl::nextInto(std::byte *const *dst, Element &scratch) {
  if (!next(scratch))
    return false;
  for (std::size_t c = 0; c < scratch.size(); ++c)
    if (scratch[c].numBytes())
      std::memcpy(dst[c], scratch[c].data(), scratch[c].numBytes());
  return true;
}

void DatasetNode::readElement(std::uint64_t, std::byte *const *) const {
  TESSERA_INTERNAL_ASSERT(false, "readElement of a node without random access");
}

bool hasFixedShapes(const ElementSpec &spec) {
  for (const ComponentSpec &c : spec.components())
    if (std::find(c.shape.begin(), c.shape.end(), anyDim) != c.shape.end())
      return false;
  return true;
}

void resetToSpec(const ElementSpec &spec, Element &out) {
  out.components.resize(spec.size());
  for (std::size_t c = 0; c < spec.size(); ++c)
    out[c].reset(spec[c].type, spec[c].shape);
}

} // namespace detail

using namespace detail;

Dataset Dataset::fromTensors(std::vector<HostTensor> tensors,
                             std::vector<std::string> names) {
  return Dataset(makeTensorSliceNode(std::move(tensors), names));
}

Dataset Dataset::fromElement(const Element &element,
                             std::vector<std::string> names) {
  // One slice of tensors with a leading dimension of 1.
  std::vector<HostTensor> tensors;
  for (const HostTensor &c : element.components) {
    Shape shape{1};
    shape.insert(shape.end(), c.shape().begin(), c.shape().end());
    tensors.push_back(c.reshaped(std::move(shape)));
  }
  return fromTensors(std::move(tensors), std::move(names));
}

Dataset Dataset::fromGenerator(std::function<Generator()> makeGenerator,
                               ElementSpec spec, Cardinality cardinality) {
  return Dataset(makeGeneratorNode(std::move(makeGenerator), std::move(spec),
                                   cardinality));
}

Dataset Dataset::map(MapFn fn, std::size_t numParallelCalls) const {
  return map(std::move(fn), spec(), numParallelCalls);
}

Dataset Dataset::map(MapFn fn, ElementSpec outputSpec,
                     std::size_t numParallelCalls) const {
  if (!fn)
    throw Error("map: the function is empty; pass a callable");
  if (numParallelCalls == 0)
    throw Error("map: numParallelCalls 0 would never call the function; use "
                "1 (on the consumer's thread), more, or autotune");
  if (numParallelCalls == autotune)
    numParallelCalls = std::max(1u, std::thread::hardware_concurrency());
  if (numParallelCalls == 1)
    return Dataset(makeMapNode(node_, std::move(fn), std::move(outputSpec)));
  // Threads beyond a few per core only add contention.
  const std::size_t limit =
      4 * std::size_t(std::max(1u, std::thread::hardware_concurrency()));
  if (numParallelCalls > limit)
    throw Error("map: numParallelCalls " + std::to_string(numParallelCalls) +
                " is more than 4 threads per hardware thread (" +
                std::to_string(limit) + "); use at most that, or autotune");
  return Dataset(makeParallelMapNode(node_, std::move(fn),
                                     std::move(outputSpec),
                                     static_cast<unsigned>(numParallelCalls)));
}

Dataset Dataset::cast(std::size_t component, Type type) const {
  return Dataset(makeCastNode(node_, component, type));
}

Dataset Dataset::shuffle(std::size_t bufferSize, std::uint64_t seed,
                         bool reshuffleEachIteration) const {
  return Dataset(
      makeShuffleNode(node_, bufferSize, seed, reshuffleEachIteration));
}

Dataset Dataset::batch(std::size_t batchSize, bool dropRemainder) const {
  return Dataset(makeBatchNode(node_, batchSize, dropRemainder));
}

Dataset Dataset::repeat(std::uint64_t count) const {
  return Dataset(makeRepeatNode(node_, count));
}

Dataset Dataset::repeat() const {
  return Dataset(makeRepeatNode(node_, std::nullopt));
}

Dataset Dataset::take(std::uint64_t count) const {
  return Dataset(makeTakeNode(node_, count));
}

Dataset Dataset::skip(std::uint64_t count) const {
  return Dataset(makeSkipNode(node_, count));
}

Dataset Dataset::shard(std::uint64_t numShards, std::uint64_t index,
                       std::uint64_t blockSize) const {
  return Dataset(makeShardNode(node_, numShards, index, blockSize));
}

Dataset Dataset::prefetch(std::size_t depth) const {
  return Dataset(makePrefetchNode(node_, depth == autotune ? 4 : depth));
}

const ElementSpec &Dataset::spec() const { return node_->spec(); }

Cardinality Dataset::cardinality() const { return node_->cardinality(); }

Iterator Dataset::iterator() const { return Iterator(node_); }

Iterator::Iterator(std::shared_ptr<const DatasetNode> node)
    : node_(std::move(node)), impl_(node_->makeIterator()) {}

Iterator::Iterator(Iterator &&) noexcept = default;

Iterator &Iterator::operator=(Iterator &&other) noexcept {
  if (this != &other) {
    // The old pass (and its worker threads) must end before the node it
    // reads from can go.
    impl_ = std::move(other.impl_);
    node_ = std::move(other.node_);
    failure_ = std::move(other.failure_);
  }
  return *this;
}

Iterator::~Iterator() = default;

const ElementSpec &Iterator::spec() const { return node_->spec(); }

std::optional<Element> Iterator::next() {
  Element e;
  if (!next(e))
    return std::nullopt;
  return e;
}

bool Iterator::next(Element &out) {
  if (failure_)
    std::rethrow_exception(failure_);
  if (!impl_)
    return false;
  try {
    if (impl_->next(out))
      return true;
  } catch (...) {
    failure_ = std::current_exception();
    impl_.reset();
    throw;
  }
  // Finished: free buffers and stop worker threads now, not when the
  // Iterator goes away.
  impl_.reset();
  return false;
}

} // namespace tessera::data
