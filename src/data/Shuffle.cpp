// shuffle(): a seeded buffer shuffle whose order is the same on every
// platform and standard library, so runs are reproducible anywhere.
#include "Pipeline.hpp"

#include <algorithm>
#include <atomic>
#include <optional>
#include <utility>

namespace tessera::data::detail {
namespace {

// SplitMix64: tiny, statistically sound for shuffling, and fully specified
// here (std::uniform_int_distribution differs between libraries).
class Random {
public:
  explicit Random(std::uint64_t seed) : state_(seed) {}

  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

  // Uniform in [0, n) without modulo bias (Lemire's multiply-and-reject).
  std::uint64_t below(std::uint64_t n) {
    unsigned __int128 m = static_cast<unsigned __int128>(next()) * n;
    auto low = static_cast<std::uint64_t>(m);
    if (low < n) {
      const std::uint64_t threshold = (0 - n) % n;
      while (low < threshold) {
        m = static_cast<unsigned __int128>(next()) * n;
        low = static_cast<std::uint64_t>(m);
      }
    }
    return static_cast<std::uint64_t>(m >> 64);
  }

private:
  std::uint64_t state_;
};

class ShuffleNode final : public DatasetNode {
public:
  ShuffleNode(NodePtr input, std::size_t bufferSize, std::uint64_t seed,
              bool reshuffle)
      : DatasetNode(input->spec(), input->cardinality()),
        input_(std::move(input)), bufferSize_(bufferSize), seed_(seed),
        reshuffle_(reshuffle) {}

  std::unique_ptr<IteratorImpl> makeIterator() const override;

  const DatasetNode &input() const { return *input_; }
  std::size_t bufferSize() const { return bufferSize_; }

  // The seed of the next iteration. Iterations are numbered in the order
  // they are created, which a single-threaded program (and repeat(), which
  // creates one epoch after the other) makes deterministic.
  std::uint64_t nextIterationSeed() const {
    const std::uint64_t k = reshuffle_ ? iterations_.fetch_add(1) : 0;
    Random mix(seed_ ^ Random(k).next());
    return mix.next();
  }

private:
  NodePtr input_;
  std::size_t bufferSize_;
  std::uint64_t seed_;
  bool reshuffle_;
  mutable std::atomic<std::uint64_t> iterations_{0};
};

// The shuffle algorithm, over slots that hold either whole elements or,
// for an in-memory input, element indices: the picks depend only on the
// number of slots, so both give the same order, and indices spare copying
// the whole dataset into the buffer.
class ShuffleIterator final : public IteratorImpl {
public:
  explicit ShuffleIterator(const ShuffleNode &node)
      : node_(node), random_(node.nextIterationSeed()),
        indexCount_(node.input().randomAccessCount()) {
    if (!indexCount_)
      input_ = node.input().makeIterator();
  }

  bool next(Element &out) override {
    if (indexCount_) {
      std::uint64_t index;
      if (!nextIndex(index))
        return false;
      resetToSpec(node_.spec(), out);
      pointers_.resize(out.size());
      for (std::size_t c = 0; c < out.size(); ++c)
        pointers_[c] = static_cast<std::byte *>(out[c].data());
      node_.input().readElement(index, pointers_.data());
      return true;
    }
    return nextElement(out);
  }

  bool nextInto(std::byte *const *dst, Element &scratch) override {
    if (!indexCount_)
      return IteratorImpl::nextInto(dst, scratch);
    std::uint64_t index;
    if (!nextIndex(index))
      return false;
    node_.input().readElement(index, dst);
    return true;
  }

private:
  bool nextIndex(std::uint64_t &index) {
    if (!filled_) {
      const std::uint64_t n =
          std::min<std::uint64_t>(node_.bufferSize(), *indexCount_);
      indices_.resize(static_cast<std::size_t>(n));
      for (std::uint64_t i = 0; i < n; ++i)
        indices_[i] = i;
      nextInput_ = n;
      filled_ = true;
    }
    if (indices_.empty())
      return false;
    const std::size_t j = random_.below(indices_.size());
    index = indices_[j];
    if (nextInput_ < *indexCount_) {
      indices_[j] = nextInput_++;
    } else {
      indices_[j] = indices_.back();
      indices_.pop_back();
    }
    return true;
  }

  bool nextElement(Element &out) {
    if (!filled_) {
      fill();
      filled_ = true;
    }
    if (buffer_.empty())
      return false;
    const std::size_t j = random_.below(buffer_.size());
    // The consumer's old buffers move into slot j and are refilled there.
    std::swap(out, buffer_[j]);
    if (!inputDone_ && input_->next(buffer_[j]))
      return true;
    inputDone_ = true;
    if (j + 1 != buffer_.size())
      buffer_[j] = std::move(buffer_.back());
    buffer_.pop_back();
    return true;
  }

  void fill() {
    // A buffer larger than the dataset only ever holds the dataset; one over
    // a dataset of unknown size grows as it fills.
    const Cardinality card = node_.input().cardinality();
    const std::uint64_t expected = card.isFinite() ? card.count() : 4096;
    buffer_.reserve(static_cast<std::size_t>(
        std::min<std::uint64_t>(node_.bufferSize(), expected)));
    while (buffer_.size() < node_.bufferSize()) {
      Element e;
      if (!input_->next(e)) {
        inputDone_ = true;
        return;
      }
      buffer_.push_back(std::move(e));
    }
  }

  const ShuffleNode &node_;
  Random random_;
  const std::optional<std::uint64_t> indexCount_;
  bool filled_ = false;
  // Index slots.
  std::vector<std::uint64_t> indices_;
  std::uint64_t nextInput_ = 0;
  std::vector<std::byte *> pointers_;
  // Element slots.
  std::unique_ptr<IteratorImpl> input_;
  std::vector<Element> buffer_;
  bool inputDone_ = false;
};

std::unique_ptr<IteratorImpl> ShuffleNode::makeIterator() const {
  return std::make_unique<ShuffleIterator>(*this);
}

} // namespace

NodePtr makeShuffleNode(NodePtr input, std::size_t bufferSize,
                        std::uint64_t seed, bool reshuffleEachIteration) {
  if (bufferSize == 0)
    throw ShapeError("shuffle: a buffer of 0 elements cannot hold anything "
                     "to pick from; use a buffer of at least 1 (the dataset's "
                     "size for a uniform shuffle)");
  return std::make_shared<ShuffleNode>(std::move(input), bufferSize, seed,
                                       reshuffleEachIteration);
}

} // namespace tessera::data::detail
