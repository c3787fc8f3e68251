// The first graph of the TensorFlow-for-IPU tutorial (tutorial_basic.py):
// three placeholders a, b, c of shape [2] fed from the host, and
//   o1 = a + b;  o2 = a + c;  result = o1 + o2
// run on one IPU of the IPU Model with a = [1, 1], b = [0, 1], c = [1, 5].
// Prints the result as the tutorial's print(result) does: [3. 8.]
#include "FeedDict.hpp"
#include "NumpyFormat.hpp"

#include "tessera/ir/Builder.hpp"

#include <iostream>

using namespace tessera;
using data::HostTensor;

namespace {

ir::Value basicGraph(ir::Value pa, ir::Value pb, ir::Value pc) {
  ir::Value o1 = pa + pb;
  ir::Value o2 = pa + pc;
  return o1 + o2;
}

} // namespace

int main() {
  // The placeholders and the graph (ipu_scope("/device:IPU:0")).
  ir::Module module("basic_graph");
  ir::Builder b(module);
  ir::Value pa = b.input("a", FLOAT, {2});
  ir::Value pb = b.input("b", FLOAT, {2});
  ir::Value pc = b.input("c", FLOAT, {2});
  b.output("result", basicGraph(pa, pb, pc));

  // IPUConfig: one IPU of the IPU Model (TF_POPLAR_FLAGS=--use_ipu_model).
  session::Config cfg;
  cfg.autoSelectIpus = 1;
  session::Session sess(std::move(module), cfg,
                        {.feeds = {"a", "b", "c"}, .outfeeds = {"result"}});
  sess.compile();
  std::cerr << "Device /device:IPU:0 attached to the IPU Model (1 IPU, "
            << cfg.ipuModel.tilesPerIpu << " tiles)\n";

  // sess.run(result, feed_dict={pa: [1., 1.], pb: [0., 1.], pc: [1., 5.]})
  const std::vector<HostTensor> result =
      examples::runWithFeeds(sess,
                             {HostTensor::fromValues<float>({2}, {1, 1}),
                              HostTensor::fromValues<float>({2}, {0, 1}),
                              HostTensor::fromValues<float>({2}, {1, 5})},
                             {"result"});
  std::cout << examples::numpyStr(result[0].values<float>(), result[0].shape())
            << '\n';
  return 0;
}
