// The tutorial's sharded graph (tutorial_sharding.py): four IPUs, three
// shards adding pairs of the placeholders in parallel and a fourth summing
// their results:
//   shard 0: o1 = a + b    shard 1: o2 = a + c    shard 2: o3 = b + c
//   shard 3: out = o1 + o2 + o3
// with a = [1, 1], b = [0, 1], c = [1, 5]. Prints the result as the
// tutorial does, [array([ 4., 14.], dtype=float32)], and on standard error
// the IPUs of the multi-IPU device it ran on.
#include "FeedDict.hpp"
#include "NumpyFormat.hpp"

#include "tessera/ir/Builder.hpp"

#include <iostream>

using namespace tessera;
using data::HostTensor;

namespace {

constexpr unsigned kNumIpus = 4;

ir::Value shardedGraph(ir::Builder &b, ir::Value pa, ir::Value pb,
                       ir::Value pc) {
  ir::Value o1, o2, o3;
  {
    ir::ShardScope shard(b, 0); // with ipu.scopes.ipu_shard(0):
    o1 = pa + pb;
  }
  {
    ir::ShardScope shard(b, 1);
    o2 = pa + pc;
  }
  {
    ir::ShardScope shard(b, 2);
    o3 = pb + pc;
  }
  ir::ShardScope shard(b, 3);
  return o1 + o2 + o3;
}

} // namespace

int main() {
  ir::Module module("sharded_graph");
  ir::Builder b(module);
  ir::Value pa = b.input("a", FLOAT, {2});
  ir::Value pb = b.input("b", FLOAT, {2});
  ir::Value pc = b.input("c", FLOAT, {2});
  b.output("result", shardedGraph(b, pa, pb, pc));

  // cfg.auto_select_ipus = NUM_IPUS
  session::Config cfg;
  cfg.autoSelectIpus = kNumIpus;
  session::Session sess(std::move(module), cfg,
                        {.feeds = {"a", "b", "c"}, .outfeeds = {"result"}});
  sess.compile();
  std::cerr << "Device /device:IPU:0 attached to IPUs 0-" << kNumIpus - 1
            << " of the IPU Model\n";

  const std::vector<HostTensor> result =
      examples::runWithFeeds(sess,
                             {HostTensor::fromValues<float>({2}, {1, 1}),
                              HostTensor::fromValues<float>({2}, {0, 1}),
                              HostTensor::fromValues<float>({2}, {1, 5})},
                             {"result"});
  std::cout << '['
            << examples::numpyRepr(result[0].values<float>(), result[0].shape())
            << "]\n";
  return 0;
}
