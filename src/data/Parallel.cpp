// Parallel map and prefetch: worker threads produce elements ahead of the
// consumer into a bounded ring of slots, one slot per sequence number, so
// the consumer takes them in input order however the workers interleave.
#include "Pipeline.hpp"

#include <condition_variable>
#include <mutex>
#include <thread>

namespace tessera::data::detail {
namespace {

class ParallelNode final : public DatasetNode {
public:
  // A null \p fn makes a prefetch: elements pass through unchanged.
  ParallelNode(NodePtr input, Dataset::MapFn fn, ElementSpec spec,
               unsigned numWorkers, std::size_t capacity)
      : DatasetNode(std::move(spec), input->cardinality()),
        input_(std::move(input)), fn_(std::move(fn)), numWorkers_(numWorkers),
        capacity_(capacity) {}

  std::unique_ptr<IteratorImpl> makeIterator() const override;

  const DatasetNode &input() const { return *input_; }
  const Dataset::MapFn &fn() const { return fn_; }
  unsigned numWorkers() const { return numWorkers_; }
  std::size_t capacity() const { return capacity_; }

private:
  NodePtr input_;
  Dataset::MapFn fn_;
  unsigned numWorkers_;
  std::size_t capacity_;
};

class ParallelIterator final : public IteratorImpl {
public:
  explicit ParallelIterator(const ParallelNode &node)
      : node_(node), input_(node.input().makeIterator()),
        slots_(node.capacity()) {
    threads_.reserve(node.numWorkers());
    try {
      for (unsigned w = 0; w < node.numWorkers(); ++w)
        threads_.emplace_back([this] { workerMain(); });
    } catch (...) {
      stopWorkers();
      throw;
    }
  }

  ~ParallelIterator() override { stopWorkers(); }

  bool next(Element &out) override;

private:
  struct Slot {
    Element element;
    std::exception_ptr error;
    bool ready = false;
  };

  void workerMain();
  bool reserve(Element &buffers);
  bool pull(Element &e, std::uint64_t &seq, std::exception_ptr &error);
  void deposit(std::uint64_t seq, Element &&e, std::exception_ptr error);
  void finishInput(std::uint64_t endSeq, Element &&unused);
  void stopWorkers();

  const ParallelNode &node_;
  std::unique_ptr<IteratorImpl> input_;

  // Guarded by inputMutex_: the input is pulled by one worker at a time,
  // which also numbers the elements in input order.
  std::mutex inputMutex_;
  bool inputEnded_ = false;
  std::uint64_t nextSeq_ = 0;

  // Guarded by mutex_.
  std::mutex mutex_;
  std::condition_variable spaceFreed_, slotFilled_;
  std::vector<Slot> slots_;
  std::vector<Element> spare_; // consumers' old buffers, for reuse
  std::size_t reserved_ = 0;   // slots taken by workers and not yet consumed
  std::uint64_t nextOut_ = 0;
  std::uint64_t endSeq_ = ~std::uint64_t(0);
  unsigned workersWaiting_ = 0; // in reserve()
  bool consumerWaiting_ = false;
  bool stop_ = false;

  std::vector<std::thread> threads_;
};

// A worker first reserves a slot, so at most capacity() elements exist
// ahead of the consumer, then pulls an element, maps it and deposits it.
void ParallelIterator::workerMain() {
  for (;;) {
    Element e;
    if (!reserve(e))
      return;
    std::uint64_t seq = 0;
    std::exception_ptr error;
    if (!pull(e, seq, error))
      return;
    if (!error && node_.fn()) {
      try {
        e = node_.fn()(std::move(e));
        if (!node_.spec().matches(e))
          node_.spec().check(e, "map: the function's result for element " +
                                    std::to_string(seq));
      } catch (...) {
        error = std::current_exception();
      }
    }
    deposit(seq, std::move(e), error);
    if (error && !node_.fn())
      return; // the input failed and has ended
  }
}

bool ParallelIterator::reserve(Element &buffers) {
  std::unique_lock lock(mutex_);
  ++workersWaiting_;
  spaceFreed_.wait(lock, [&] {
    return stop_ || nextOut_ == endSeq_ || reserved_ < slots_.size();
  });
  --workersWaiting_;
  if (stop_ || nextOut_ == endSeq_)
    return false;
  ++reserved_;
  if (!spare_.empty()) {
    buffers = std::move(spare_.back());
    spare_.pop_back();
  }
  return true;
}

// False when the input had already ended or ends now (the worker exits);
// an input that throws yields true with \p error set, and ends the input.
bool ParallelIterator::pull(Element &e, std::uint64_t &seq,
                            std::exception_ptr &error) {
  std::lock_guard inputLock(inputMutex_);
  if (inputEnded_) {
    finishInput(~std::uint64_t(0), std::move(e));
    return false;
  }
  seq = nextSeq_++;
  try {
    if (input_->next(e))
      return true;
  } catch (...) {
    error = std::current_exception();
  }
  inputEnded_ = true;
  if (error) {
    // The error takes slot seq; the sequence ends after it.
    std::lock_guard lock(mutex_);
    endSeq_ = seq + 1;
    return true;
  }
  finishInput(seq, std::move(e));
  return false;
}

// Gives back a reservation that produced no element; \p endSeq, unless all
// ones, is where the sequence ends.
void ParallelIterator::finishInput(std::uint64_t endSeq, Element &&unused) {
  {
    std::lock_guard lock(mutex_);
    --reserved_;
    if (endSeq != ~std::uint64_t(0))
      endSeq_ = endSeq;
    spare_.push_back(std::move(unused));
  }
  slotFilled_.notify_all();
  spaceFreed_.notify_all();
}

void ParallelIterator::deposit(std::uint64_t seq, Element &&e,
                               std::exception_ptr error) {
  bool wake;
  {
    std::lock_guard lock(mutex_);
    Slot &slot = slots_[seq % slots_.size()];
    slot.element = std::move(e);
    slot.error = error;
    slot.ready = true;
    wake = consumerWaiting_ && seq == nextOut_;
  }
  if (wake)
    slotFilled_.notify_one();
}

bool ParallelIterator::next(Element &out) {
  std::unique_lock lock(mutex_);
  Slot *slot = nullptr;
  consumerWaiting_ = true;
  slotFilled_.wait(lock, [&] {
    slot = &slots_[nextOut_ % slots_.size()];
    return slot->ready || nextOut_ == endSeq_;
  });
  consumerWaiting_ = false;
  if (!slot->ready)
    return false;
  slot->ready = false;
  ++nextOut_;
  --reserved_;
  std::exception_ptr error = std::move(slot->error);
  slot->error = nullptr;
  if (!error) {
    std::swap(out, slot->element);
    spare_.push_back(std::move(slot->element));
  }
  // Waking sleeping workers only once half the slots are free lets each
  // wake-up refill many slots: on a busy machine a wake-up can take longer
  // than producing an element.
  const bool wake = workersWaiting_ > 0 && reserved_ <= slots_.size() / 2;
  lock.unlock();
  if (wake)
    spaceFreed_.notify_all();
  if (error)
    std::rethrow_exception(error);
  return true;
}

void ParallelIterator::stopWorkers() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  spaceFreed_.notify_all();
  for (std::thread &t : threads_)
    t.join();
  threads_.clear();
}

std::unique_ptr<IteratorImpl> ParallelNode::makeIterator() const {
  return std::make_unique<ParallelIterator>(*this);
}

} // namespace

NodePtr makeParallelMapNode(NodePtr input, Dataset::MapFn fn,
                            ElementSpec outputSpec, unsigned numWorkers) {
  // Elements are handed over one by one, so the slots must let workers run
  // well ahead of a consumer that is slow to wake up.
  const std::size_t capacity = 16 * std::size_t(numWorkers);
  return std::make_shared<ParallelNode>(std::move(input), std::move(fn),
                                        std::move(outputSpec), numWorkers,
                                        capacity);
}

NodePtr makePrefetchNode(NodePtr input, std::size_t depth) {
  if (depth == 0)
    throw ShapeError("prefetch: a depth of 0 holds no elements ahead; use a "
                     "depth of at least 1, or autotune");
  ElementSpec spec = input->spec();
  return std::make_shared<ParallelNode>(std::move(input), nullptr,
                                        std::move(spec), 1, depth);
}

} // namespace tessera::data::detail
