// Reading an outfeed while the device loop still runs, as in "Accessing
// outfeed queue results during execution" of TensorFlow for the IPU
// (outfeed_example.py):
//
//   def body(v):
//     v = v + 1
//     outfeed_queue.enqueue(v)
//   loops.repeat(NUM_ITERATIONS, body, [v])     # NUM_ITERATIONS = 100
//
// run twice: once, then again while a host thread dequeues results as they
// arrive. Here v is a [4, 4] variable starting at ones that keeps its value
// between runs, so the runs outfeed 2, 3, ..., 201.
//
// A loop of 100 small additions ends long before a thread starts, so the
// increment comes from an infeed that paces the second run: its element
// for step j waits until the reader has taken result j - kSlack. The loop
// then cannot finish before the reader has taken most of its results, which
// shows the outfeed delivering while the loop runs on every machine. The
// reader checks that the results arrive in order and prints a line every 25
// results and the whole array at the end of each run.
#include "NumpyFormat.hpp"

#include "tessera/data/Dataset.hpp"
#include "tessera/ir/Builder.hpp"
#include "tessera/session/Session.hpp"

#include <chrono>
#include <condition_variable>
#include <iostream>
#include <mutex>
#include <thread>

using namespace tessera;

namespace {

constexpr unsigned kIterations = 100;
constexpr unsigned kSlack = 10;
const std::vector<std::size_t> kShape{4, 4};

// How many results the reader has taken, for the pacing infeed.
struct Progress {
  std::mutex mutex;
  std::condition_variable changed;
  unsigned dequeued = 0;
};

// Increments of 1, the second run's held back until the reader catches up.
data::Dataset pacedIncrements(Progress &progress) {
  auto makeGenerator = [&progress] {
    return [&progress, step = 0u]() mutable -> std::optional<data::Element> {
      const unsigned j = step++;
      if (j == 2 * kIterations)
        return std::nullopt; // both runs fed
      if (j >= kIterations) {
        std::unique_lock lock(progress.mutex);
        // A reader that never comes would hang the loop; give up instead.
        if (!progress.changed.wait_for(lock, std::chrono::seconds(60), [&] {
              return progress.dequeued + kSlack >= j;
            }))
          throw RuntimeError("outfeed example: the reader took no results "
                             "for a minute");
      }
      return data::Element{data::HostTensor::scalar<float>(1)};
    };
  };
  return data::Dataset::fromGenerator(makeGenerator,
                                      {{"increment", FLOAT, {}}});
}

// The seed's dequeue(): takes results until both runs' are in.
bool dequeue(session::Outfeed &outfeed, Progress &progress) {
  bool inOrder = true;
  for (unsigned counter = 1; counter <= kIterations * 2; ++counter) {
    const data::Element r = *outfeed.dequeue(/*wait=*/true);
    {
      std::lock_guard lock(progress.mutex);
      progress.dequeued = counter;
    }
    progress.changed.notify_all();
    const auto v = r[0].values<float>();
    for (float x : v)
      inOrder = inOrder && x == float(counter + 1);
    if (counter % 25 == 0)
      std::cout << "dequeued " << counter << " results; the last has v[0] = "
                << examples::numpyStr(v.subspan(0, 4), {4}) << '\n';
    if (counter % kIterations == 0)
      std::cout << "result " << counter << ":\n"
                << examples::numpyStr(v, kShape) << '\n';
  }
  return inOrder;
}

} // namespace

int main() {
  ir::Module module("outfeed_example");
  ir::Builder b(module);
  ir::Value v = b.variable("v", {4, 4}, ir::init::ones(), FLOAT,
                           /*trainable=*/false);
  ir::Value increment = b.input("increment", FLOAT, {});
  ir::Value next = v + increment;
  b.output("v", next); // what the loop outfeeds
  b.update(v, next);   // the value v takes for the next step

  session::Config cfg;
  session::Session sess(std::move(module), cfg,
                        {.feeds = {"increment"},
                         .outfeeds = {"v"},
                         .stepsPerExecution = kIterations});
  sess.compile();
  Progress progress;
  session::Infeed infeed(pacedIncrements(progress));
  session::Outfeed outfeedQueue;
  sess.connect(infeed, outfeedQueue);

  sess.run(); // run the main loop once
  bool inOrder = false;
  std::thread reader([&] { inOrder = dequeue(outfeedQueue, progress); });
  sess.run(); // and again, while the reader takes results
  unsigned takenWhileRunning = 0;
  {
    std::lock_guard lock(progress.mutex);
    takenWhileRunning = progress.dequeued;
  }
  reader.join();
  std::cerr << "the reader had taken " << takenWhileRunning << " of "
            << 2 * kIterations << " results when the second run returned\n";
  // The pacing guarantees this; it failing means results were held back.
  const bool overlapped = takenWhileRunning + kSlack + 1 >= 2 * kIterations;
  std::cout << (inOrder ? "every result arrived in order"
                        : "results arrived out of order")
            << '\n'
            << (overlapped ? "the reader took results while the loop ran"
                           : "the reader took no results while the loop ran")
            << '\n';
  return inOrder && overlapped ? 0 : 1;
}
