// Sources: slices of in-memory tensors, and user generators.
#include "Pipeline.hpp"

#include <cstring>
#include <optional>

namespace tessera::data::detail {
namespace {

class TensorSliceNode final : public DatasetNode {
public:
  TensorSliceNode(std::vector<HostTensor> tensors, ElementSpec spec,
                  std::size_t count)
      : DatasetNode(std::move(spec), Cardinality::finite(count)),
        tensors_(std::move(tensors)), count_(count) {
    for (const ComponentSpec &c : this->spec().components())
      sliceBytes_.push_back(numElements(c.shape) * typeSize(c.type));
  }

  std::unique_ptr<IteratorImpl> makeIterator() const override;
  std::optional<std::uint64_t> randomAccessCount() const override {
    return count_;
  }
  void readElement(std::uint64_t index, std::byte *const *dst) const override {
    for (std::size_t c = 0; c < tensors_.size(); ++c)
      if (sliceBytes_[c])
        std::memcpy(dst[c],
                    static_cast<const std::byte *>(tensors_[c].data()) +
                        index * sliceBytes_[c],
                    sliceBytes_[c]);
  }

  std::size_t count() const { return count_; }

private:
  std::vector<HostTensor> tensors_;
  std::vector<std::size_t> sliceBytes_;
  std::size_t count_;
};

class TensorSliceIterator final : public IteratorImpl {
public:
  explicit TensorSliceIterator(const TensorSliceNode &node) : node_(node) {}

  bool next(Element &out) override {
    if (index_ == node_.count())
      return false;
    resetToSpec(node_.spec(), out);
    pointers_.resize(out.size());
    for (std::size_t c = 0; c < out.size(); ++c)
      pointers_[c] = static_cast<std::byte *>(out[c].data());
    node_.readElement(index_++, pointers_.data());
    return true;
  }

  bool nextInto(std::byte *const *dst, Element &) override {
    if (index_ == node_.count())
      return false;
    node_.readElement(index_++, dst);
    return true;
  }

private:
  const TensorSliceNode &node_;
  std::size_t index_ = 0;
  std::vector<std::byte *> pointers_;
};

std::unique_ptr<IteratorImpl> TensorSliceNode::makeIterator() const {
  return std::make_unique<TensorSliceIterator>(*this);
}

class GeneratorNode final : public DatasetNode {
public:
  GeneratorNode(std::function<Dataset::Generator()> makeGenerator,
                ElementSpec spec, Cardinality cardinality)
      : DatasetNode(std::move(spec), cardinality),
        makeGenerator_(std::move(makeGenerator)) {}

  std::unique_ptr<IteratorImpl> makeIterator() const override;

  Dataset::Generator generator() const { return makeGenerator_(); }

private:
  std::function<Dataset::Generator()> makeGenerator_;
};

class GeneratorIterator final : public IteratorImpl {
public:
  explicit GeneratorIterator(const GeneratorNode &node) : node_(node) {}

  bool next(Element &out) override {
    if (done_)
      return false;
    // The generator starts on the first next(), so creating an iterator
    // (a repeat() setting up its next epoch, say) runs no user code.
    if (!generator_) {
      generator_ = node_.generator();
      if (!generator_)
        throw Error("fromGenerator: the generator factory returned an empty "
                    "function; return a callable that yields elements");
    }
    std::optional<Element> element = generator_();
    if (!element) {
      done_ = true;
      return false;
    }
    if (!node_.spec().matches(*element))
      node_.spec().check(*element,
                         "fromGenerator: element " + std::to_string(index_));
    ++index_;
    out = std::move(*element);
    return true;
  }

private:
  const GeneratorNode &node_;
  Dataset::Generator generator_;
  std::size_t index_ = 0;
  bool done_ = false;
};

std::unique_ptr<IteratorImpl> GeneratorNode::makeIterator() const {
  return std::make_unique<GeneratorIterator>(*this);
}

} // namespace

NodePtr makeTensorSliceNode(std::vector<HostTensor> tensors,
                            const std::vector<std::string> &names) {
  if (tensors.empty())
    throw ShapeError("fromTensors: no tensors were given; pass at least one "
                     "tensor to slice");
  if (!names.empty() && names.size() != tensors.size())
    throw ShapeError("fromTensors: " + std::to_string(names.size()) +
                     " names were given for " + std::to_string(tensors.size()) +
                     " tensors; give one name per tensor or none");
  std::vector<ComponentSpec> components;
  for (std::size_t c = 0; c < tensors.size(); ++c) {
    const HostTensor &t = tensors[c];
    const std::string name = names.empty() ? std::string() : names[c];
    const std::string what = "tensor " + std::to_string(c) +
                             (name.empty() ? "" : " (\"" + name + "\")");
    if (t.rank() == 0)
      throw ShapeError("fromTensors: " + what +
                       " is a scalar, which has no dimension 0 to slice; "
                       "reshape it to [1] for a dataset of one element");
    if (t.dim(0) != tensors[0].dim(0))
      throw ShapeError("fromTensors: tensor 0 has " +
                       std::to_string(tensors[0].dim(0)) +
                       " elements along dimension 0 but " + what + " has " +
                       std::to_string(t.dim(0)) +
                       "; every tensor needs one slice per element");
    components.push_back(
        {name, t.type(), Shape(t.shape().begin() + 1, t.shape().end())});
  }
  const std::size_t count = tensors[0].dim(0);
  return std::make_shared<TensorSliceNode>(
      std::move(tensors), ElementSpec(std::move(components)), count);
}

NodePtr makeGeneratorNode(std::function<Dataset::Generator()> makeGenerator,
                          ElementSpec spec, Cardinality cardinality) {
  if (!makeGenerator)
    throw Error("fromGenerator: the generator factory is empty; pass a "
                "function that returns a generator");
  if (spec.size() == 0)
    throw ShapeError("fromGenerator: the element spec has no components; "
                     "declare the type and shape of each component");
  return std::make_shared<GeneratorNode>(std::move(makeGenerator),
                                         std::move(spec), cardinality);
}

} // namespace tessera::data::detail
