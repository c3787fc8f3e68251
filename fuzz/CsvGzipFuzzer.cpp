// CSV text read through gzip: the input is compressed here, so the fuzzer
// mutates the CSV and every input reaches the gzip path. Properties: the
// .csv.gz gives exactly what the plain file gives (same elements, or both
// rejected), and a .csv.gz cut short anywhere is rejected, never read as a
// shorter data set.
#include "FuzzCommon.hpp"

#include "tessera/data/Dataset.hpp"
#include "tessera/support/Hash.hpp"

#include <zlib.h>

#include <optional>
#include <vector>

namespace {

using tessera::data::Element;

// A gzip member holding \p text (deflate with a gzip wrapper).
std::string gzip(const std::string &text) {
  z_stream z{};
  if (deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8,
                   Z_DEFAULT_STRATEGY) != Z_OK)
    std::abort();
  std::string out(deflateBound(&z, text.size()) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef *>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int r = deflate(&z, Z_FINISH);
  tessera::fuzz::require(r == Z_STREAM_END, "zlib deflate did not finish");
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// Every element of the CSV at \p path, or nothing when it is rejected.
std::optional<std::vector<Element>> readAll(const std::string &path) {
  try {
    tessera::data::Iterator it =
        tessera::data::Dataset::csv(path, {}).iterator();
    std::vector<Element> all;
    while (auto e = it.next())
      all.push_back(std::move(*e));
    return all;
  } catch (const tessera::Error &) {
    return std::nullopt;
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data,
                                      std::size_t size) {
  using namespace tessera;
  if (size > (1u << 20))
    return 0; // keeps an execution fast; the plain harness takes any size
  const std::string text = fuzz::bytes(data, size);
  const std::string gz = gzip(text);
  const auto plain = readAll(fuzz::writeScratch("input.csv", text));
  const auto zipped = readAll(fuzz::writeScratch("input.csv.gz", gz));
  fuzz::require(plain.has_value() == zipped.has_value(),
                "the .csv.gz is rejected and the plain .csv not, or the "
                "other way round");
  if (plain)
    fuzz::require(*plain == *zipped,
                  "the .csv.gz gives other elements than the plain .csv");
  // A cut past the 10-byte gzip header and before the end: the member's
  // data or trailer is missing, which the reader must notice.
  const std::size_t cut = 10 + hash64(text) % (gz.size() - 10);
  const auto truncated =
      readAll(fuzz::writeScratch("cut.csv.gz", gz.substr(0, cut)));
  fuzz::require(!truncated.has_value(),
                "a truncated .csv.gz was read without an error");
  return 0;
}
