// A device-side loop fed by an infeed and drained by an outfeed, as in the
// "Training loops, data sets and feed queues" example of TensorFlow for the
// IPU (perf_training_example.py):
//
//   ds = Dataset.from_tensors(tf.constant(1.0, shape=[800]))
//            .map(lambda x: [x, x]).repeat()
//   def body(x1, x2): outfeed_queue.enqueue({'d1': x1 + x2, 'd2': x1 - x2})
//   loops.repeat(10, body, [], infeed_queue)
//
// The ten steps run on the device in one call (stepsPerExecution = 10),
// each taking the next element from the infeed; afterwards the outfeed
// holds every step's d1 and d2, printed as the tutorial's print(result)
// prints its dictionary of [10, 800] arrays.
#include "NumpyFormat.hpp"

#include "tessera/data/Dataset.hpp"
#include "tessera/ir/Builder.hpp"
#include "tessera/session/Session.hpp"

#include <iostream>

using namespace tessera;
using data::HostTensor;

namespace {

constexpr std::size_t kSize = 800;
constexpr unsigned kSteps = 10;

// Stacks one component of every step into a [steps, ...] array.
std::vector<float> stack(const std::vector<data::Element> &steps,
                         std::size_t component) {
  std::vector<float> all;
  for (const data::Element &e : steps) {
    const auto v = e[component].values<float>();
    all.insert(all.end(), v.begin(), v.end());
  }
  return all;
}

// ds: one constant element, mapped to the pair (x, x), repeated.
data::Dataset dataset() {
  const HostTensor ones =
      HostTensor::fromValues<float>({kSize}, std::vector<float>(kSize, 1));
  const data::ElementSpec pair{{"x1", FLOAT, {kSize}}, {"x2", FLOAT, {kSize}}};
  auto toPair = [](data::Element e) { return data::Element{e[0], e[0]}; };
  return data::Dataset::fromElement({ones}).map(toPair, pair).repeat();
}

} // namespace

int main() {
  const data::Dataset ds = dataset();

  // The body of the loop.
  ir::Module module("body");
  ir::Builder b(module);
  ir::Value x1 = b.input("x1", FLOAT, {kSize});
  ir::Value x2 = b.input("x2", FLOAT, {kSize});
  b.output("d1", x1 + x2);
  b.output("d2", x1 - x2);

  session::Config cfg;
  session::Session sess(std::move(module), cfg,
                        {.feeds = {"x1", "x2"},
                         .outfeeds = {"d1", "d2"},
                         .stepsPerExecution = kSteps});
  sess.compile();
  session::Infeed infeedQueue(ds);
  session::Outfeed outfeedQueue(session::OutfeedMode::ALL);
  sess.connect(infeedQueue, outfeedQueue);
  sess.run(); // all ten steps, without returning to the host between them

  const std::vector<data::Element> steps = outfeedQueue.dequeueAll();
  std::cerr << "the loop took " << infeedQueue.elementsTaken()
            << " elements from the infeed and queued " << steps.size()
            << " steps on the outfeed\n";
  const std::vector<float> d1 = stack(steps, 0), d2 = stack(steps, 1);
  const std::vector<std::size_t> shape{steps.size(), kSize};
  std::cout << "{'d1': " << examples::numpyRepr(d1, shape)
            << ", 'd2': " << examples::numpyRepr(d2, shape) << "}\n";
  return 0;
}
