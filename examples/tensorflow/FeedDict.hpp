/// \file
/// TensorFlow 1's `session.run(fetches, feed_dict)` for the examples: one
/// step of a compiled session fed with one value per placeholder, returning
/// the fetched outputs shaped as the module declares them.
#pragma once

#include "tessera/data/Dataset.hpp"
#include "tessera/session/Session.hpp"

#include <string>
#include <vector>

namespace tessera::examples {

/// Runs one step of \p session (compiled, stepsPerExecution 1) with
/// \p feeds, one tensor per feed of its RunSpec in that order, and returns
/// the values of \p outfeeds (the RunSpec's outfeeds, in that order).
inline std::vector<data::HostTensor>
runWithFeeds(session::Session &session, std::vector<data::HostTensor> feeds,
             const std::vector<std::string> &outfeeds) {
  // A fresh infeed per call replaces the previous one's stream callbacks,
  // so each run reads exactly this feed dictionary.
  session::Infeed infeed(data::Dataset::fromElement(data::Element(feeds)));
  session::Outfeed outfeed;
  session.connect(infeed, outfeed);
  session.run();
  data::Element fetched = *outfeed.dequeue(/*wait=*/true);
  std::vector<data::HostTensor> results;
  for (std::size_t i = 0; i < outfeeds.size(); ++i) {
    const ir::Module &m = session.module();
    fetched[i].reshape(m.typeOf(m.output(outfeeds[i])).shape);
    results.push_back(std::move(fetched[i]));
  }
  return results;
}

} // namespace tessera::examples
