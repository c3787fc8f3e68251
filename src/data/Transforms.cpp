// Element-at-a-time transformations that run on the consumer's thread.
#include "Pipeline.hpp"

#include "tessera/support/Convert.hpp"

#include <algorithm>
#include <cstring>

namespace tessera::data::detail {
namespace {

// Holds the input node; the iterators below reach it through input().
class UnaryNode : public DatasetNode {
public:
  UnaryNode(NodePtr input, ElementSpec spec, Cardinality cardinality)
      : DatasetNode(std::move(spec), cardinality), input_(std::move(input)) {}
  const DatasetNode &input() const { return *input_; }

private:
  NodePtr input_;
};

class MapNode final : public UnaryNode {
public:
  MapNode(NodePtr input, Dataset::MapFn fn, ElementSpec spec)
      : UnaryNode(input, std::move(spec), input->cardinality()),
        fn_(std::move(fn)) {}
  std::unique_ptr<IteratorImpl> makeIterator() const override;
  const Dataset::MapFn &fn() const { return fn_; }

private:
  Dataset::MapFn fn_;
};

class MapIterator final : public IteratorImpl {
public:
  explicit MapIterator(const MapNode &node)
      : node_(node), input_(node.input().makeIterator()) {}
  bool next(Element &out) override {
    if (!input_->next(out))
      return false;
    out = node_.fn()(std::move(out));
    // The message is built only on failure: most elements pass.
    if (!node_.spec().matches(out))
      node_.spec().check(out, "map: the function's result for element " +
                                  std::to_string(index_));
    ++index_;
    return true;
  }

private:
  const MapNode &node_;
  std::unique_ptr<IteratorImpl> input_;
  std::size_t index_ = 0;
};

std::unique_ptr<IteratorImpl> MapNode::makeIterator() const {
  return std::make_unique<MapIterator>(*this);
}

class CastNode final : public UnaryNode {
public:
  CastNode(NodePtr input, ElementSpec spec, std::size_t component)
      : UnaryNode(input, std::move(spec), input->cardinality()),
        component_(component) {}
  std::unique_ptr<IteratorImpl> makeIterator() const override;
  std::size_t component() const { return component_; }

private:
  std::size_t component_;
};

class CastIterator final : public IteratorImpl {
public:
  explicit CastIterator(const CastNode &node)
      : node_(node), input_(node.input().makeIterator()) {}
  bool next(Element &out) override {
    if (!input_->next(out))
      return false;
    // Converting into a kept buffer and swapping it in allocates nothing
    // once the buffers have grown to size.
    HostTensor &in = out[node_.component()];
    converted_.reset(node_.spec()[node_.component()].type, in.shape());
    convertElements(in.type(), in.data(), converted_.type(), converted_.data(),
                    in.numElements());
    std::swap(in, converted_);
    return true;
  }

private:
  const CastNode &node_;
  std::unique_ptr<IteratorImpl> input_;
  HostTensor converted_;
};

std::unique_ptr<IteratorImpl> CastNode::makeIterator() const {
  return std::make_unique<CastIterator>(*this);
}

class BatchNode final : public UnaryNode {
public:
  BatchNode(NodePtr input, ElementSpec spec, Cardinality cardinality,
            std::size_t batchSize, bool dropRemainder)
      : UnaryNode(std::move(input), std::move(spec), cardinality),
        batchSize_(batchSize), dropRemainder_(dropRemainder) {}
  std::unique_ptr<IteratorImpl> makeIterator() const override;
  std::size_t batchSize() const { return batchSize_; }
  bool dropRemainder() const { return dropRemainder_; }

private:
  std::size_t batchSize_;
  bool dropRemainder_;
};

class BatchIterator final : public IteratorImpl {
public:
  explicit BatchIterator(const BatchNode &node)
      : node_(node), input_(node.input().makeIterator()),
        fixedShapes_(hasFixedShapes(node.input().spec())) {
    for (const ComponentSpec &c : node.input().spec().components())
      rowBytes_.push_back(numElements(c.shape) * typeSize(c.type));
    rows_.resize(rowBytes_.size());
  }

  bool next(Element &out) override {
    if (done_)
      return false;
    const std::size_t n = node_.batchSize();
    std::size_t filled = fixedShapes_ ? fillFixed(out, n) : fillVarying(out, n);
    if (filled == 0 || (filled < n && node_.dropRemainder()))
      return false;
    if (filled < n)
      for (HostTensor &c : out.components)
        c.shrinkLeadingDim(filled);
    return true;
  }

private:
  // Input elements of known shapes are written straight to their rows.
  std::size_t fillFixed(Element &out, std::size_t n) {
    startBatch(out, n, node_.input().spec());
    for (std::size_t filled = 0; filled < n; ++filled) {
      for (std::size_t c = 0; c < rows_.size(); ++c)
        rows_[c] =
            static_cast<std::byte *>(out[c].data()) + filled * rowBytes_[c];
      if (!input_->nextInto(rows_.data(), scratch_)) {
        done_ = true;
        return filled;
      }
    }
    return n;
  }

  // Shapes known only per element: the first element of a batch sets them.
  std::size_t fillVarying(Element &out, std::size_t n) {
    for (std::size_t filled = 0; filled < n; ++filled) {
      if (!input_->next(scratch_)) {
        done_ = true;
        return filled;
      }
      if (filled == 0)
        startBatch(out, n, ElementSpec::of(scratch_));
      else
        checkSameShapes(out, filled);
      for (std::size_t c = 0; c < scratch_.size(); ++c) {
        const std::size_t bytes = scratch_[c].numBytes();
        if (bytes)
          std::memcpy(static_cast<std::byte *>(out[c].data()) + filled * bytes,
                      scratch_[c].data(), bytes);
      }
    }
    return n;
  }

  void startBatch(Element &out, std::size_t n, const ElementSpec &element) {
    out.components.resize(element.size());
    for (std::size_t c = 0; c < element.size(); ++c) {
      batchShape_.assign(1, n);
      batchShape_.insert(batchShape_.end(), element[c].shape.begin(),
                         element[c].shape.end());
      out[c].reset(element[c].type, batchShape_);
    }
  }

  // The rows of one batch must agree on the dimensions the spec leaves open.
  void checkSameShapes(const Element &out, std::size_t row) const {
    for (std::size_t c = 0; c < scratch_.size(); ++c) {
      const Shape &batch = out[c].shape(), &element = scratch_[c].shape();
      if (!std::equal(batch.begin() + 1, batch.end(), element.begin(),
                      element.end()))
        throw ShapeError("batch: element " + std::to_string(row) +
                         " of a batch has " + node_.input().spec().describe(c) +
                         " of shape " + shapeString(element) +
                         " but element 0 had " +
                         shapeString(Shape(batch.begin() + 1, batch.end())) +
                         "; batch only elements of equal shapes (batch with "
                         "dropRemainder = true before batching again)");
    }
  }

  const BatchNode &node_;
  std::unique_ptr<IteratorImpl> input_;
  const bool fixedShapes_;
  std::vector<std::size_t> rowBytes_;
  std::vector<std::byte *> rows_;
  Element scratch_;
  Shape batchShape_;
  bool done_ = false;
};

std::unique_ptr<IteratorImpl> BatchNode::makeIterator() const {
  return std::make_unique<BatchIterator>(*this);
}

class TakeNode final : public UnaryNode {
public:
  TakeNode(NodePtr input, Cardinality cardinality, std::uint64_t count,
           bool skip)
      : UnaryNode(input, input->spec(), cardinality), count_(count),
        skip_(skip) {}
  std::unique_ptr<IteratorImpl> makeIterator() const override;
  std::uint64_t count() const { return count_; }
  bool skip() const { return skip_; }

  // The first elements of a random-access input, or the rest, are random
  // access too: a shuffle of fromTensors(...).take(n) then reads the
  // elements it picks straight into its batch rather than first copying
  // all n into its buffer, one allocation each (same picks either way).
  std::optional<std::uint64_t> randomAccessCount() const override {
    const std::optional<std::uint64_t> n = input().randomAccessCount();
    if (!n)
      return std::nullopt;
    return skip_ ? *n - std::min(*n, count_) : std::min(*n, count_);
  }
  void readElement(std::uint64_t index, std::byte *const *dst) const override {
    input().readElement(skip_ ? index + count_ : index, dst);
  }

private:
  std::uint64_t count_;
  bool skip_; // skip() rather than take()
};

class TakeIterator final : public IteratorImpl {
public:
  explicit TakeIterator(const TakeNode &node)
      : node_(node), input_(node.input().makeIterator()) {}
  bool next(Element &out) override {
    if (node_.skip()) {
      for (; seen_ < node_.count(); ++seen_)
        if (!input_->next(out))
          return false;
      return input_->next(out);
    }
    if (seen_ == node_.count() || !input_->next(out))
      return false;
    ++seen_;
    return true;
  }

private:
  const TakeNode &node_;
  std::unique_ptr<IteratorImpl> input_;
  std::uint64_t seen_ = 0;
};

std::unique_ptr<IteratorImpl> TakeNode::makeIterator() const {
  return std::make_unique<TakeIterator>(*this);
}

class RepeatNode final : public UnaryNode {
public:
  RepeatNode(NodePtr input, Cardinality cardinality,
             std::optional<std::uint64_t> count)
      : UnaryNode(input, input->spec(), cardinality), count_(count) {}
  std::unique_ptr<IteratorImpl> makeIterator() const override;
  std::optional<std::uint64_t> count() const { return count_; }

private:
  std::optional<std::uint64_t> count_;
};

class RepeatIterator final : public IteratorImpl {
public:
  explicit RepeatIterator(const RepeatNode &node) : node_(node) {}
  bool next(Element &out) override {
    while (!done_) {
      if (!current_) {
        if (node_.count() && epoch_ == *node_.count()) {
          done_ = true;
          break;
        }
        current_ = node_.input().makeIterator();
        producedThisEpoch_ = false;
      }
      if (current_->next(out)) {
        producedThisEpoch_ = true;
        return true;
      }
      current_.reset();
      ++epoch_;
      // An empty epoch means every epoch is empty: stop rather than spin.
      if (!producedThisEpoch_)
        done_ = true;
    }
    return false;
  }

private:
  const RepeatNode &node_;
  std::unique_ptr<IteratorImpl> current_;
  std::uint64_t epoch_ = 0;
  bool producedThisEpoch_ = false;
  bool done_ = false;
};

std::unique_ptr<IteratorImpl> RepeatNode::makeIterator() const {
  return std::make_unique<RepeatIterator>(*this);
}

} // namespace

NodePtr makeMapNode(NodePtr input, Dataset::MapFn fn, ElementSpec outputSpec) {
  return std::make_shared<MapNode>(std::move(input), std::move(fn),
                                   std::move(outputSpec));
}

NodePtr makeCastNode(NodePtr input, std::size_t component, Type type) {
  const ElementSpec &in = input->spec();
  if (component >= in.size())
    throw ShapeError("cast: component " + std::to_string(component) +
                     " was asked for but the elements have " +
                     std::to_string(in.size()) + " components " +
                     in.toString());
  std::vector<ComponentSpec> components = in.components();
  components[component].type = type;
  return std::make_shared<CastNode>(
      std::move(input), ElementSpec(std::move(components)), component);
}

NodePtr makeBatchNode(NodePtr input, std::size_t batchSize,
                      bool dropRemainder) {
  if (batchSize == 0)
    throw ShapeError("batch: a batch size of 0 makes empty batches; use a "
                     "batch size of at least 1");
  std::vector<ComponentSpec> components = input->spec().components();
  for (ComponentSpec &c : components)
    c.shape.insert(c.shape.begin(), dropRemainder ? batchSize : anyDim);
  const Cardinality in = input->cardinality();
  Cardinality out = in;
  if (in.isFinite())
    out = Cardinality::finite(dropRemainder
                                  ? in.count() / batchSize
                                  : (in.count() + batchSize - 1) / batchSize);
  return std::make_shared<BatchNode>(std::move(input),
                                     ElementSpec(std::move(components)), out,
                                     batchSize, dropRemainder);
}

NodePtr makeTakeNode(NodePtr input, std::uint64_t count) {
  const Cardinality in = input->cardinality();
  Cardinality out = Cardinality::unknown();
  if (in.isFinite())
    out = Cardinality::finite(std::min(in.count(), count));
  else if (in.isInfinite())
    out = Cardinality::finite(count);
  return std::make_shared<TakeNode>(std::move(input), out, count, false);
}

NodePtr makeSkipNode(NodePtr input, std::uint64_t count) {
  const Cardinality in = input->cardinality();
  Cardinality out = in;
  if (in.isFinite())
    out = Cardinality::finite(in.count() - std::min(in.count(), count));
  return std::make_shared<TakeNode>(std::move(input), out, count, true);
}

NodePtr makeRepeatNode(NodePtr input, std::optional<std::uint64_t> count) {
  const Cardinality in = input->cardinality();
  Cardinality out = in;
  if (count && *count == 0)
    out = Cardinality::finite(0);
  else if (in.isFinite() && in.count() == 0)
    out = in;
  else if (in.isFinite())
    out = count ? Cardinality::finite(in.count() * *count)
                : Cardinality::infinite();
  return std::make_shared<RepeatNode>(std::move(input), out, count);
}

} // namespace tessera::data::detail
