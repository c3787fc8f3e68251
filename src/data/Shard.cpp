// Dataset::shard: one instance's share of a dataset, in blocks, so that
// the instances of a distributed run together see the single-process
// order (PopDist's data sharding).
#include "Pipeline.hpp"

#include "tessera/support/Error.hpp"

#include <algorithm>
#include <string>

namespace tessera::data::detail {
namespace {

class ShardNode : public DatasetNode {
public:
  ShardNode(NodePtr input, Cardinality out, std::uint64_t shards,
            std::uint64_t index, std::uint64_t block)
      : DatasetNode(input->spec(), out), input_(std::move(input)),
        shards_(shards), index_(index), block_(block) {}
  std::unique_ptr<IteratorImpl> makeIterator() const override;

  bool keeps(std::uint64_t k) const { return (k / block_) % shards_ == index_; }
  const NodePtr &input() const { return input_; }

private:
  NodePtr input_;
  std::uint64_t shards_, index_, block_;
};

class ShardIterator : public IteratorImpl {
public:
  explicit ShardIterator(const ShardNode &node)
      : node_(node), input_(node.input()->makeIterator()) {}
  bool next(Element &out) override {
    for (;;) {
      if (!input_->next(out))
        return false;
      if (node_.keeps(position_++))
        return true;
    }
  }

private:
  const ShardNode &node_;
  std::unique_ptr<IteratorImpl> input_;
  std::uint64_t position_ = 0;
};

std::unique_ptr<IteratorImpl> ShardNode::makeIterator() const {
  return std::make_unique<ShardIterator>(*this);
}

} // namespace

NodePtr makeShardNode(NodePtr input, std::uint64_t shards, std::uint64_t index,
                      std::uint64_t block) {
  if (shards == 0 || block == 0 || index >= shards)
    throw OptionError("shard: shard " + std::to_string(index) + " of " +
                      std::to_string(shards) + " in blocks of " +
                      std::to_string(block) +
                      " does not exist; give at least one shard and block "
                      "and an index below the shard count");
  const Cardinality in = input->cardinality();
  Cardinality out = in;
  if (in.isFinite()) {
    const std::uint64_t round = shards * block, n = in.count();
    const std::uint64_t rest = n % round, start = index * block;
    out = Cardinality::finite(
        n / round * block + (rest > start ? std::min(rest - start, block) : 0));
  }
  return std::make_shared<ShardNode>(std::move(input), out, shards, index,
                                     block);
}

} // namespace tessera::data::detail
