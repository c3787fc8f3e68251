/// \file
/// Input pipelines: a Dataset describes a sequence of elements (sources,
/// then transformations), and an Iterator walks it.
///
/// \code
///   using namespace tessera::data;
///   Dataset train = fashionMnist(Split::Train)   // (image [28,28,1], label)
///                       .shuffle(60000, /*seed=*/42)
///                       .batch(32, /*dropRemainder=*/true)
///                       .repeat()
///                       .prefetch(autotune);
///   Iterator it = train.iterator();
///   Element batch;
///   while (it.next(batch)) // reuses batch's buffers from the second call
///     feed(batch[0].values<float>(), batch[1].values<int>());
/// \endcode
///
/// A Dataset is an immutable description; copying one is cheap and every
/// transformation returns a new Dataset that shares its input. Iterating
/// never changes the description, so one Dataset can be iterated many times
/// (each iteration of a shuffled dataset gets its own order, see shuffle()).
///
/// Output order is deterministic: parallel map and prefetch run user code
/// on worker threads but deliver elements in input order, and an exception
/// thrown for an element reaches the consumer's next() at that element's
/// place in the sequence. Generators and map functions upstream of a
/// prefetch() run on its worker thread, and a map with numParallelCalls > 1
/// calls its function from several threads at once: such code must not
/// share unsynchronised state.
#pragma once

#include "tessera/data/Element.hpp"
#include "tessera/data/HostTensor.hpp"
#include "tessera/data/Idx.hpp"

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tessera::data {

namespace detail {
class DatasetNode;
class IteratorImpl;
} // namespace detail

/// Asks map() for one worker thread per hardware thread, or prefetch() for
/// a buffer of four elements.
inline constexpr std::size_t autotune = std::numeric_limits<std::size_t>::max();

/// How Dataset::idx turns an images file and a labels file into elements.
struct IdxOptions {
  /// Images as float: bytes divided by 255 (so in [0, 1]), other element
  /// types converted unscaled. false keeps the file's element type.
  bool normalize = true;
  /// The shape of one image element, e.g. {28, 28, 1} or {784}; empty keeps
  /// the file's shape. It must hold as many elements as the file's images.
  Shape imageShape;
  /// The element type of the label component.
  Type labelType = Type::INT;
};

/// How Dataset::csv reads a file of numeric columns.
struct CsvOptions {
  char delimiter = ',';
  /// The first line names the columns. Without a header the columns are
  /// named by their position: "0", "1", ...
  bool header = true;
  /// The column that becomes the "label" component (a scalar per row);
  /// empty: the elements have only a "features" component.
  std::string labelColumn;
  /// The columns that make up "features", in this order; empty: every
  /// column except the label, in file order.
  std::vector<std::string> featureColumns;
  Type featureType = Type::FLOAT;
  Type labelType = Type::INT;
};

class Iterator;

class Dataset {
public:
  /// Returns the element with its components changed, or a new one.
  using MapFn = std::function<Element(Element)>;
  /// Produces the next element, or nothing at the end.
  using Generator = std::function<std::optional<Element>()>;

  /// The slices of \p tensors along dimension 0: element i holds slice i of
  /// every tensor. All tensors must have the same dimension 0 (a
  /// ShapeError names the two that differ). \p names names the components
  /// (none, or one per tensor).
  static Dataset fromTensors(std::vector<HostTensor> tensors,
                             std::vector<std::string> names = {});
  /// A dataset of the one element \p element (repeat() it for a constant
  /// stream of synthetic data).
  static Dataset fromElement(const Element &element,
                             std::vector<std::string> names = {});
  /// Elements from a generator. \p makeGenerator is called once for each
  /// iteration of the dataset (repeat() calls it again each epoch); every
  /// element it produces is checked against \p spec, a TypeError or
  /// ShapeError naming the element and component otherwise.
  static Dataset
  fromGenerator(std::function<Generator()> makeGenerator, ElementSpec spec,
                Cardinality cardinality = Cardinality::unknown());
  /// (image, label) elements from an IDX images file and an IDX labels
  /// file, gzip-compressed or plain, read when this is called. Missing or
  /// malformed files and unequal counts are errors naming the file.
  static Dataset idx(const std::string &imagesPath,
                     const std::string &labelsPath,
                     const IdxOptions &options = {});
  /// (features, label) or (features) elements from a CSV file (gzip or
  /// plain) of numeric columns, read when this is called. A bad field is a
  /// SerializationError giving its line, its column and what it holds; an
  /// unknown column name is an OptionError listing the columns.
  static Dataset csv(const std::string &path, const CsvOptions &options = {});

  /// Applies \p fn to every element. The function must return elements of
  /// this dataset's spec (a TypeError or ShapeError otherwise); use the
  /// overload with an output spec when it changes types or shapes.
  /// \p numParallelCalls > 1 (or autotune) runs \p fn on that many worker
  /// threads at once, up to 16 finished elements per thread ahead of the
  /// consumer; the output order stays the input order. Each element then
  /// crosses threads, which costs microseconds: map a cheap function after
  /// batch(), not before.
  Dataset map(MapFn fn, std::size_t numParallelCalls = 1) const;
  /// As above, for a function returning elements of \p outputSpec.
  Dataset map(MapFn fn, ElementSpec outputSpec,
              std::size_t numParallelCalls = 1) const;
  /// Converts component \p component to \p type.
  Dataset cast(std::size_t component, Type type) const;
  /// Shuffles with a buffer of \p bufferSize elements: the buffer fills from
  /// the input, then each output is a random pick from it, replaced by the
  /// next input element. A buffer at least as large as the dataset gives a
  /// uniform shuffle. The order depends only on \p seed and on how many
  /// iterations of this dataset came before: with \p reshuffleEachIteration
  /// the k-th iterator (or the k-th epoch under repeat()) uses an order
  /// derived from (seed, k); without, every iteration has the same order.
  Dataset shuffle(std::size_t bufferSize, std::uint64_t seed = 0,
                  bool reshuffleEachIteration = true) const;
  /// Stacks \p batchSize consecutive elements into one, each component
  /// gaining a leading dimension. The last batch may be short unless
  /// \p dropRemainder, which drops it (and gives every batch the static
  /// shape the IPU needs).
  Dataset batch(std::size_t batchSize, bool dropRemainder = false) const;
  /// The dataset \p count times over (a fresh iteration of the input each
  /// time, so shuffles reshuffle).
  Dataset repeat(std::uint64_t count) const;
  /// The dataset over and over, without end. An input that turns out to be
  /// empty ends the repetition instead of looping for ever.
  Dataset repeat() const;
  /// At most the first \p count elements.
  Dataset take(std::uint64_t count) const;
  /// All but the first \p count elements.
  Dataset skip(std::uint64_t count) const;
  /// Shard \p index of \p numShards (tf.data's shard, PopDist's per-instance
  /// data): the elements k with (k / blockSize) % numShards == index, in
  /// order. With blockSize = the replicas each instance runs, instance i
  /// of a distributed run takes exactly the elements its replicas take in
  /// a single-process run over the whole dataset. OptionError when
  /// \p index >= \p numShards or a count is 0.
  Dataset shard(std::uint64_t numShards, std::uint64_t index,
                std::uint64_t blockSize = 1) const;
  /// Produces elements ahead of the consumer on a worker thread, holding up
  /// to \p depth finished elements (autotune: four). Exceptions raised
  /// while producing reach the consumer's next() in order; destroying the
  /// iterator stops the worker.
  Dataset prefetch(std::size_t depth = autotune) const;

  /// The names, types and shapes of the elements.
  const ElementSpec &spec() const;
  /// The number of elements, when it is known without iterating.
  Cardinality cardinality() const;
  /// A new iteration from the first element.
  Iterator iterator() const;

private:
  explicit Dataset(std::shared_ptr<const detail::DatasetNode> node)
      : node_(std::move(node)) {}
  std::shared_ptr<const detail::DatasetNode> node_;
};

/// One pass over a dataset. Movable, not copyable; destroying it mid-way
/// stops any worker threads of the pipeline. If next() throws, the
/// iteration is over: later calls throw the same exception again.
class Iterator {
public:
  Iterator(Iterator &&) noexcept;
  Iterator &operator=(Iterator &&) noexcept;
  ~Iterator();

  /// The next element, or nothing at the end of the dataset.
  std::optional<Element> next();
  /// Writes the next element into \p out, reusing its buffers when they are
  /// large enough; false at the end (\p out is then unspecified). The fast
  /// way to drain a pipeline.
  bool next(Element &out);
  /// The spec every element matches.
  const ElementSpec &spec() const;

private:
  friend class Dataset;
  explicit Iterator(std::shared_ptr<const detail::DatasetNode> node);
  std::shared_ptr<const detail::DatasetNode> node_;
  std::unique_ptr<detail::IteratorImpl> impl_; // null once finished
  std::exception_ptr failure_;
};

/// Which part of a data set.
enum class Split { Train, Test };

/// The shape Fashion-MNIST images come in.
struct FashionMnistOptions {
  /// {28, 28, 1} (height, width, channels) by default; {784} flattens.
  Shape imageShape = {28, 28, 1};
  /// Where the four files are (Debian's dataset-fashion-mnist by default).
  std::string directory = fashionMnistDirectory();
};

/// Fashion-MNIST from Debian's dataset-fashion-mnist package: 60000 (Train)
/// or 10000 (Test) elements of ("image": float in [0, 1], "label": int
/// 0..9). A missing file is an error naming the package to install.
Dataset fashionMnist(Split split, const FashionMnistOptions &options = {});

} // namespace tessera::data
